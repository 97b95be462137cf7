"""The `llamon-playground` command's entry point: refuses an unsupported system in one line,
before anything POSIX-only (fcntl, Unix sockets) is imported, then runs `cli.main`."""

from __future__ import annotations

import sys

from llamon_playground.common.platform import refusal


def main(argv: list[str] | None = None) -> int:
    refused = refusal(sys.platform)
    if refused is not None:
        print(f"llamon-playground: {refused}", file=sys.stderr)
        return 1
    from llamon_playground.cli.daemon_fork import note_inherited_fds
    note_inherited_fds()  # before anything opens a file of its own
    from llamon_playground.cli.main import main as run

    return run(argv)
