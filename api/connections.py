"""The front's connections: a cap, an idle timeout, and a quiet accept loop.

A browser tab, a stuck client or a flood can open connections and send nothing. Without a
limit each one keeps a file descriptor for ever; at the open-files limit `accept()` fails
and asyncio logs a traceback for every retry, while nobody gets an answer. So:
- a connection with no request in progress is closed after `idle_timeout` seconds, a new one
  still sending its headers included (aiohttp's keep-alive timer runs from the connection's
  start: `keepalive_timeout`); a running request (an SSE stream) is never cut;
- at most `cap` connections are open at once, fewer than the open-files limit allows (each
  relayed request holds a second descriptor, to the daemon): one more takes the place of
  the oldest connection the door has not admitted yet (api/slots.py), or, when the door
  admitted every one, is answered `503 too_many_connections` and closed at once;
- an accept that fails for want of descriptors is one warning line every few seconds.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import time
from typing import Any

from aiohttp import web

from llamon_playground.api.slots import DoorRequestHandler, Slots

log = logging.getLogger(__name__)

WARN_EVERY = 10.0  # seconds between two "out of descriptors" warnings
RESOURCE_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})
_BODY = (b'{"detail":{"error":"too_many_connections","message":"the front has too many open '
         b'connections; retry later"}}')
TOO_MANY = (b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
            b"Retry-After: 1\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s"
            % (len(_BODY), _BODY))


class _Refuse(asyncio.Protocol):
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.WriteTransport)
        transport.write(TOO_MANY)
        transport.close()


class CappedSite(web.TCPSite):
    """TCPSite whose protocol factory makes room past the cap, or refuses."""

    def __init__(self, runner: web.BaseRunner, host: str, port: int, cap: int,
                 slots: Slots) -> None:
        super().__init__(runner, host, port, reuse_address=True)
        self.cap = cap
        self.slots = slots

    async def start(self) -> None:
        await web.BaseSite.start(self)  # registers the site with its runner
        server = self._runner.server
        assert server is not None

        loop = asyncio.get_running_loop()
        unregistered = 0  # made here, not yet in server.connections

        def registered() -> None:
            nonlocal unregistered
            unregistered -= 1

        def protocol() -> asyncio.BaseProtocol:
            nonlocal unregistered
            # A flood is accepted in bursts, and the loop makes every protocol of a burst
            # before the first one's connection_made (which puts it in server.connections)
            # runs: those made but not yet registered count too. `registered` runs right
            # before that connection_made, both scheduled as this connection is accepted.
            # An evicted connection leaves server.connections when its close runs, a
            # moment later: until then the cap may be passed by the ones that replaced it.
            if (len(server.connections) + unregistered >= self.cap
                    and not self.slots.evict_one()):
                return _Refuse()
            unregistered += 1
            loop.call_soon(registered)
            handler = server()
            assert isinstance(handler, DoorRequestHandler)
            self.slots.opened(handler)
            return handler

        self._server = await loop.create_server(
            protocol, self._host, self._port, backlog=self._backlog,
            reuse_address=self._reuse_address)
        self._bound_port = self._server.sockets[0].getsockname()[1]


class QuietAccept:
    """A loop exception handler: accept() out of descriptors is a rate-limited warning line;
    anything else goes to the handler that was there before."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._previous = loop.get_exception_handler()
        self._last = -WARN_EVERY
        self.suppressed = 0

    def __call__(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        exc = context.get("exception")
        if isinstance(exc, OSError) and exc.errno in RESOURCE_ERRNOS:
            now = time.monotonic()
            if now - self._last >= WARN_EVERY:
                log.warning("cannot accept connections: %s (%d more since the last warning); "
                            "asyncio retries each second", exc.strerror, self.suppressed)
                self._last, self.suppressed = now, 0
            else:
                self.suppressed += 1
            return
        if self._previous is not None:
            self._previous(loop, context)
        else:
            loop.default_exception_handler(context)
