"""The daemon: the long-lived owner of all state of one project.

Its rooms, from the bottom up (each imports only rooms below it, as its own `__init__`
states):

- `a2a` (the client speaking to the Host) and `data` (pure code: parts, redaction, JSON
  depth and diff, compare, bundle JSON and validation): import only `common` and `errors`.
- `store` (SQLite, migrations, blobs, the event log, history rows, the bundle import and
  export SQL, the history service) and `introspect` (the project's source read as text and
  AST): above `a2a` and `data`, beside each other.
- `runs` (the run lifecycle, boot recovery): above `store` and `introspect`.
- `suites` (suites of cases kept in history, suite runs, their reports): above `runs`.
- `tracing` (runs exported as OpenTelemetry traces, when an endpoint is set): above
  `store`, beside `runs`, which never import it.
- `http` (the routes on the Unix socket): on top.

`errors` and `sd_notify` are leaves any room may use; `app` is the composition root, the one
module that wires the rooms together and hands each route group its services.

May import: common, host_manager, daemon.a2a, daemon.data, daemon.introspect, daemon.store,
    daemon.runs, daemon.suites, daemon.tracing, daemon.http
"""
