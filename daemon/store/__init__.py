"""Durable state: the SQLite database (one writer), migrations, the content-addressed blob
store, the event log with live fan-out, session/run history rows, lineage, the bundle
import and export SQL (`bundles`), project events, and the history service the routes call
(`history_service`: reads, edits, files, bundles and deletion with its rules; deleting all
of it a step at a time is `removal`'s).

Above `data` (pure helpers); below `runs`, which it never imports: what it must know of the
active run is passed in.

May import: common, daemon.errors, daemon.data, daemon.store.removal
"""
