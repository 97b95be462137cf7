"""The `llamon-playground` command and the Python client a Studio imports.

The composition root above both processes: `main` starts the daemon (`daemon.app`) and the
front (`api.app`), `control` drives a running daemon, `client` is the typed async client.
Nothing in `daemon`, `api` or `host_manager` imports this room.

May import: common, host_manager, daemon, api, cli.api_types, cli.terminal
"""
