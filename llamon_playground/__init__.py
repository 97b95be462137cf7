"""llamon Playground: a local daemon, a loopback front and a CLI for talking to an agent project.

The one import root of the distribution. Its rooms, from the leaves up (imports flow down
this list, never up):

- `common`: what both processes share (settings, logging, request ids, the runtime
  directory, the error shape, the API's fixed words). Imports nothing of the package.
- `host_manager`: the user's project process (the Host): spawn, readiness, stop, logs,
  crash policy, the capture channel. Imports only `common`.
- `daemon`: the long-lived owner of all state (history, runs, event fan-out). Imports
  `common` and `host_manager`, never `api` or `cli`.
- `api`: the front, a thin loopback HTTP server relaying to the daemon. Imports only `common`.
- `cli`: the `llamon-playground` command and the Python client. The composition root above
  both processes: the only room that imports both `daemon` and `api`.

The folders `daemon/`, `api/` and `host_manager/` sit at the top of the repository and are
mapped under this root by `pyproject.toml` (setuptools `package-dir`); they are never
imported by their bare folder names.
"""

__version__ = "0.1.0"
