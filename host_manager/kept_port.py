"""The one loopback port every Host generation of a project serves on.

Chosen once (a free port), recorded next to the generation record in the runtime directory
(0600) and kept: a restart for a save, a watch, a crash, and the next daemon all start the
Host on it again, so an address copied from one generation (a curl or Python snippet, a
Studio's A2A client) still answers after any of them. A restart waits for the previous
generation to let go of the port (it closes its listener first thing on SIGTERM; the stop
sequence's SIGKILL bounds a Host that ignores it). A port something else took meanwhile is
given up for a new one, which is recorded and kept from then on.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import socket
import time
from pathlib import Path

from llamon_playground.host_manager.environment import free_port

log = logging.getLogger(__name__)

POLL_S = 0.005


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
    """`await take(wait)` before each generation: the kept port once it is free."""

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
            deadline = time.monotonic() + wait
            while not bindable(port):
                if time.monotonic() >= deadline:
                    log.warning("the Host's port %d is taken by something else: the Host "
                                "moves to a new port", port)
                    port = None
                    break
                await asyncio.sleep(POLL_S)
        if port is None:
            port = free_port()
        if port != self.port or not self._path.exists():
            self.port = port
            self._record(port)
        return port
