"""The daemon's routes on its Unix socket: runs and sessions (`routes`), data (`data`),
Host control (`host`), capture from the Host (`capture`), introspection (`introspect`), the
SSE framing (`sse`), socket-peer trust (`peercred`) and the OpenAPI document.

The only room that maps errors to status codes. Imports any daemon room; none imports it
except `daemon.app`.
"""
