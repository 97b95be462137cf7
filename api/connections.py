"""The front's connections: a cap, an idle timeout, and a quiet accept loop.

A browser tab, a stuck client or a flood can open connections and send nothing. Without a
limit each one keeps a file descriptor for ever; at the open-files limit `accept()` fails
and asyncio logs a traceback for every retry, while nobody gets an answer. So:
- a connection with no request in progress is closed after `idle_timeout` seconds, a new one
  still sending its headers included (aiohttp's keep-alive timer runs from the connection's
  start: `keepalive_timeout`); a running request (an SSE stream) is never cut;
- at most `cap` connections are open at once, fewer than the open-files limit allows (each
  relayed request holds a second descriptor, to the daemon): one more is accepted only to
  take the place of the oldest connection the door has not admitted yet and whose grace
  is over (api/slots.py), and waits in the kernel's queue until there is one; when the door
  admitted every one, it is answered `503 too_many_connections` and closed at once;
- the kernel queues up to BACKLOG connections not yet accepted: past that it drops a new
  client's SYN, which that client sends again only a second later, so a flood of a few
  hundred sockets must not fill the queue;
- an accept that fails for want of descriptors is one warning line every few seconds.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
import time
from collections.abc import Callable
from typing import Any

from aiohttp import web

from llamon_playground.api.slots import DoorRequestHandler, Slots

log = logging.getLogger(__name__)

WARN_EVERY = 10.0  # seconds between two "out of descriptors" warnings
RESOURCE_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})
# Connections the kernel holds for accept() (clamped to net.core.somaxconn, 4096 on current
# kernels). aiohttp's 128 let a 300-socket reconnect flood fill the queue: the token holder's
# SYN was dropped and its /health took 1 s more (docs/benchmarks.md, the door's floods).
BACKLOG = 1024
ACCEPT_RETRY = 1.0  # seconds before accept() is tried again when descriptors ran out


class CappedSite(web.TCPSite):
    """TCPSite that accepts a connection only when the front's Slots have room for it
    (api/slots.py): a free slot, one a ripe pending connection gives up, or, when every
    slot is admitted, to refuse it (503). While pending ones are still in their grace, new
    ones wait in the kernel's queue, in order: the flood behind them waits too, and the
    front's work stays bounded by what ripens."""

    def __init__(self, runner: web.BaseRunner, host: str, port: int, slots: Slots) -> None:
        super().__init__(runner, host, port, reuse_address=True, backlog=BACKLOG)
        self.slots = slots
        self._accepting: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        await web.BaseSite.start(self)  # registers the site with its runner
        server = self._runner.server
        assert server is not None

        def protocol() -> asyncio.Protocol:
            handler = server()
            assert isinstance(handler, DoorRequestHandler)
            handler.slots = self.slots
            return handler

        assert self._host is not None  # the front always names its loopback address
        listeners = listen(self._host, self._port, self._backlog)
        self._server = Listening(listeners)
        self._bound_port = listeners[0].getsockname()[1]
        self._accepting = [asyncio.create_task(self._accept(sock, protocol))
                           for sock in listeners]

    async def stop(self) -> None:
        for task in self._accepting:
            task.cancel()
        await asyncio.gather(*self._accepting, return_exceptions=True)
        self._accepting = []
        await super().stop()  # closes the listening sockets

    async def _accept(self, listener: socket.socket,
                      protocol: Callable[[], asyncio.Protocol]) -> None:
        loop = asyncio.get_running_loop()
        while True:
            room = await self.slots.room()
            conns: list[socket.socket] = []
            try:
                conns.append((await loop.sock_accept(listener))[0])
                while len(conns) < room:  # the rest of a burst, without a wait
                    conns.append(listener.accept()[0])
            except (BlockingIOError, InterruptedError):
                pass
            except OSError as exc:
                if exc.errno in RESOURCE_ERRNOS:
                    loop.call_exception_handler({"message": "accept failed", "exception": exc})
                    if not conns:
                        await asyncio.sleep(ACCEPT_RETRY)  # descriptors free slowly
                else:  # one connection's trouble (ECONNABORTED...): the next is accepted
                    log.debug("accept failed: %s", exc)
            await asyncio.gather(*(_serve(loop, conn, protocol) for conn in conns))


async def _serve(loop: asyncio.AbstractEventLoop, conn: socket.socket,
                 protocol: Callable[[], asyncio.Protocol]) -> None:
    conn.setblocking(False)
    try:
        await loop.connect_accepted_socket(protocol, conn)
    except OSError:  # the client left before its transport was made
        conn.close()
    except Exception:  # a bug in making one connection must not stop the accepting
        log.exception("could not serve an accepted connection")
        conn.close()


def listen(host: str, port: int, backlog: int) -> list[socket.socket]:
    """Bound, listening, non-blocking sockets for every address `host` names."""
    socks: list[socket.socket] = []
    try:
        for family, kind, proto, _, address in socket.getaddrinfo(
                host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE):
            sock = socket.socket(family, kind, proto)
            socks.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.bind(address)
            sock.listen(backlog)
            sock.setblocking(False)
    except BaseException:
        for sock in socks:
            sock.close()
        raise
    return socks


class Listening(asyncio.AbstractServer):
    """The site's listening sockets, as the runner sees a server: it lists and closes them
    (CappedSite accepts on them itself)."""

    def __init__(self, socks: list[socket.socket]) -> None:
        self._socks = socks
        self._loop = asyncio.get_running_loop()

    def get_loop(self) -> asyncio.AbstractEventLoop:
        return self._loop

    @property
    def sockets(self) -> tuple[socket.socket, ...]:
        return tuple(self._socks)

    def close(self) -> None:
        for sock in self._socks:
            sock.close()
        self._socks = []

    def is_serving(self) -> bool:
        return bool(self._socks)

    async def wait_closed(self) -> None:
        return None

    async def start_serving(self) -> None:
        return None  # CappedSite accepts

    async def serve_forever(self) -> None:
        raise NotImplementedError("CappedSite accepts on these sockets itself")


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
                            "retried each second", exc.strerror, self.suppressed)
                self._last, self.suppressed = now, 0
            else:
                self.suppressed += 1
            return
        if self._previous is not None:
            self._previous(loop, context)
        else:
            loop.default_exception_handler(context)
