"""Suites: named, ordered lists of cases kept in history, run against the code on disk.

- `requests`: what a create or patch body may say (validation only).
- `records`: the suite tables' SQL (suites, cases, suite runs, results, the blobs cases hold).
- `cases`: a case's turns and baseline, copied from history when the suite is made.
- `report`: a case's result against its baseline, and the suite's counts (no verdict).
- `runner`: one suite run, one case at a time, each turn a normal run.
- `service`: what the routes call; the run-on-save trigger; boot recovery.

Above `runs` (a case's turns are runs, under the one-active-run rule) and `store`; below
`http`.

May import: common, host_manager, daemon.errors, daemon.data, daemon.store, daemon.runs
"""
