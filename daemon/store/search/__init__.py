"""Search over history: the words of each run (input, output, label, note, its session's
title) in an SQLite FTS5 table, kept in step by triggers the migration created, and the
filters (status, reason, label present, an evaluator failed, session) as words of its own
column. `query` turns what a person typed into an FTS5 expression that cannot be a syntax
error; `excerpt` reads FTS5's marked snippets into plain text with match offsets;
`service` runs the paged query (docs/storage.md, "Search"; docs/api.md, "Search");
`run_line` is a run's input in one line, for the lines of any list (hits, suite cases).

Reads only: every write that changes a run's words already changes the index, in its own
transaction.

May import: common, daemon.errors, daemon.data, daemon.store.database, daemon.store.history
"""
