"""The daemon's routes on its Unix socket: runs and sessions (`routes`), data (`data`),
edits and lineage (`edits`), Host control (`host`), capture from the Host (`capture`),
introspection (`introspect`), suites and suite runs (`suites`), the SSE framing (`sse`), socket-peer trust (`peercred`),
connections a front lends (`adopt`) and the OpenAPI document.

The only room that maps errors to status codes. Each route group is handed the services it
uses by `daemon.app`; handlers parse, call a service, and render. On top: none imports it
except `daemon.app`.

May import: common, host_manager, daemon.errors, daemon.a2a, daemon.data, daemon.introspect,
    daemon.store, daemon.runs, daemon.suites
"""
