"""The llamon Playground benchmark, run through `scripts/bench` (`python -m scripts.benchmarks`).

Every figure is quoted against a baseline measured in the same run, on the same machine, right
next to it. Imports flow one way: `cli` -> `plan` -> `sections/*` -> the shared helpers here
(`figures`, `configs`, `stack`, `owned`, `meters`, `client`, `raw_http`, `fixtures`,
`live_run`, `project_events`, `report`). Nothing under `llamon_playground` imports this package,
and this package imports nothing from `tests/`.
"""
