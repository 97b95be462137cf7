"""The daemon's kept-alive connections to the Host, one pool per Host generation.

Opening a TCP connection per run cost every run a connect and its first request's setup
(the run path's largest share after its commits, docs/benchmarks.md). A pool kept across
generations could not be used: every generation serves on the same port, so a kept
connection could reach the previous generation while it finishes. So the pool belongs to one
generation: a run asks for the Ready generation's, and the Host's state listener retires it
as soon as the Host is anything but that generation, Ready (a restart, a stop, a crash).
An idle connection is closed after KEEPALIVE_S, before the Host's server would close it
(uvicorn's default is 5 s), so a run never sends on a connection the Host is closing.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import aiohttp

log = logging.getLogger(__name__)

# Under uvicorn's own 5 s keep-alive: the daemon closes an idle connection before the Host.
KEEPALIVE_S = 3.0
# Runs go one at a time; the rest are a cancel, a stall probe or a card fetch beside one.
POOL_SIZE = 4


class HostConnections:
    """The Ready generation's connection pool (an aiohttp session), replaced when the
    generation changes; the sessions it retires are closed by tasks it owns and awaits."""

    def __init__(self, keepalive: float = KEEPALIVE_S) -> None:
        self._keepalive = keepalive
        self._kept: tuple[int, aiohttp.ClientSession] | None = None
        self._closing: set[asyncio.Task[None]] = set()
        self._closed = False

    def session(self, generation: int) -> aiohttp.ClientSession:
        """The kept session for generation `generation` (made on first use)."""
        if self._closed:
            raise RuntimeError("the Host's connections are closed (daemon shutdown)")
        kept = self._kept
        if kept is not None and kept[0] == generation and not kept[1].closed:
            return kept[1]
        self._retire()
        # No total timeout: a run streams as long as the Host streams.
        session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=POOL_SIZE, keepalive_timeout=self._keepalive),
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=5))
        self._kept = (generation, session)
        return session

    @property
    def generation(self) -> int | None:
        """The generation whose pool is kept now (None: none is)."""
        return self._kept[0] if self._kept is not None else None

    def host_changed(self, status: dict[str, Any]) -> None:
        """The Host's state listener: any state but the kept generation Ready retires it."""
        kept = self._kept
        if kept is not None and (status.get("state") != "ready"
                                 or status.get("generation") != kept[0]):
            self._retire()

    def _retire(self) -> None:
        kept, self._kept = self._kept, None
        if kept is None or kept[1].closed:
            return
        task = asyncio.get_running_loop().create_task(
            _close(kept[1]), name=f"host-connections-{kept[0]}-close")
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    async def close(self) -> None:
        """Daemon shutdown (after the last run ended): close every connection."""
        self._closed = True
        self._retire()
        while self._closing:
            await asyncio.gather(*self._closing, return_exceptions=True)


async def _close(session: aiohttp.ClientSession) -> None:
    try:
        await session.close()
    except Exception:  # a close that fails leaves nothing to do but say so
        log.exception("closing a Host connection pool failed")
