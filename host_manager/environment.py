"""What a Host generation starts with: its port and the environment handed to the child.

The port is the project's one A2A address (KeptPort, below).

The child gets the daemon's environment minus what belongs to the daemon alone, plus its
own generation's values: the port, a fresh capture token (only ever here, never on the
wire), the capture socket, and a marker a next daemon uses to recognise it as ours.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import socket
import time
from collections.abc import Mapping
from pathlib import Path

from llamon_playground.host_manager.capture import ENV_SOCKET, ENV_TOKEN

ENV_MARKER = "LLAMON_PLAYGROUND_HOST"
ENV_TREE = "LLAMON_PLAYGROUND_HOST_TREE"  # this project's, in every descendant (orphans.py)
# Never handed to the Host: the daemon's own service manager (socket activation, notify,
# watchdog) and capture values the daemon may itself have inherited.
DAEMON_ONLY_PREFIXES = ("LISTEN_", "WATCHDOG_")
DAEMON_ONLY = frozenset({"NOTIFY_SOCKET", ENV_TOKEN, ENV_SOCKET})


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def local_url(port: int) -> str:
    return f"http://127.0.0.1:{port}"


def marker(generation: int) -> str:
    """This daemon's name for a generation: a process carrying it is one we started."""
    return f"{os.getpid()}:{generation}"


def child_env(base_env: Mapping[str, str], *, generation: int, port: int, token: str,
              capture_socket: str, tree: str | None = None) -> dict[str, str]:
    """A new mapping; `base_env` (the daemon's own environment) is left untouched. `tree`
    marks every descendant as this project's (see orphans.py)."""
    env = {k: v for k, v in base_env.items()
           if k not in DAEMON_ONLY and not k.startswith(DAEMON_ONLY_PREFIXES)}
    env.update({"PYTHONUNBUFFERED": "1", "LLAMON_HOST_PORT": str(port),
                "LLAMON_HOST_URL": local_url(port),
                ENV_TOKEN: token, ENV_SOCKET: capture_socket,
                ENV_MARKER: marker(generation)})
    if tree is not None:
        env[ENV_TREE] = tree
    return env


# -- the kept port ---------------------------------------------------------------------------

log = logging.getLogger(__name__)

POLL_S = 0.005
# A restart's previous generation lets go of the port within a millisecond or two of its
# SIGTERM (it closes its listener first thing): look that often at first, since the whole
# save-to-output path is tens of milliseconds. A bind attempt costs ~20 µs.
EARLY_POLL_S = 0.0005
EARLY_S = 0.05


def bindable(port: int) -> bool:
    """Could a Host bind 127.0.0.1:port now? (SO_REUSEADDR as servers set it: a closed
    listener's connections in TIME_WAIT do not count.)"""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError as exc:
            if exc.errno in (errno.EADDRINUSE, errno.EACCES):
                return False
            raise
        return True


class KeptPort:
    """`await take(wait)` before each generation: the kept port once it is free.
    The one loopback port every Host generation of a project serves on.

    Chosen once (a free port), recorded next to the generation record in the runtime directory
    (0600) and kept: a restart for a save, a watch, a crash, and the next daemon all start the
    Host on it again, so an address copied from one generation (a curl or Python snippet, a
    Studio's A2A client) still answers after any of them. A restart waits for the previous
    generation to let go of the port (it closes its listener first thing on SIGTERM; the stop
    sequence's SIGKILL bounds a Host that ignores it). A port something else took meanwhile is
    given up for a new one, which is recorded and kept from then on.
    """

    def __init__(self, path: Path) -> None:
        self._path = path
        self.port: int | None = self._recorded()

    def _recorded(self) -> int | None:
        try:
            port = int(self._path.read_text(encoding="ascii").strip())
        except (OSError, ValueError):
            return None
        return port if 1024 <= port <= 65535 else None

    def _record(self, port: int) -> None:
        try:
            tmp = self._path.with_name(self._path.name + ".tmp")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="ascii") as fh:
                fh.write(f"{port}\n")
            tmp.replace(self._path)
        except OSError as exc:  # kept in memory for this daemon's life all the same
            log.warning("could not record the Host's port in %s: %s", self._path, exc)

    async def take(self, wait: float) -> int:
        """The kept port, once free (waiting up to `wait` s); a new one if it stays taken."""
        port = self.port
        if port is not None:
            started = time.monotonic()
            deadline = started + wait
            while not bindable(port):
                now = time.monotonic()
                if now >= deadline:
                    log.warning("the Host's port %d is taken by something else: the Host "
                                "moves to a new port", port)
                    port = None
                    break
                await asyncio.sleep(EARLY_POLL_S if now - started < EARLY_S else POLL_S)
        if port is None:
            port = free_port()
        if port != self.port or not self._path.exists():
            self.port = port
            self._record(port)
        return port
