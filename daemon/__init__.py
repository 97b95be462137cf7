"""The daemon: the long-lived owner of all state of one project.

Rooms: `store` (SQLite, migrations, blobs, the event log), `runs` (the run lifecycle),
`a2a` (the client speaking to the Host), `data` (parts, redaction, compare, bundles),
`introspect` (the project's source read as text and AST), `http` (the routes on the Unix
socket). `app` is the composition root that wires them; `services` is what routes see.
May import `common` and `host_manager`; never `api` or `cli`.
"""
