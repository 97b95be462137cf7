"""Durable state: the SQLite database (one writer), migrations, the content-addressed blob
store, the event log with live fan-out, session/run history rows and project events.

Imports only `common` and `daemon.errors`; everything else in the daemon builds on it.
"""
