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
from llamon_playground.common.parser_errors import connection_factory

log = logging.getLogger(__name__)

WARN_EVERY = 10.0  # seconds between two "out of descriptors" warnings
RESOURCE_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})
# Connections the kernel holds for accept() (clamped to net.core.somaxconn, 4096 on current
# kernels). aiohttp's 128 let a 300-socket reconnect flood fill the queue: the token holder's
# SYN was dropped and its /health took 1 s more (docs/benchmarks.md, the door's floods).
BACKLOG = 1024
ACCEPT_RETRY = 1.0  # seconds before accept() is tried again when descriptors ran out


class CappedSite:
    """The front's listening site: it accepts a connection only when the front's Slots have
    room for it (api/slots.py): a free slot, one a ripe pending connection gives up, or,
    when every slot is admitted, to refuse it (503). While pending ones are still in their
    grace, new ones wait in the kernel's queue, in order: the flood behind them waits too,
    and the front's work stays bounded by what ripens.

    aiohttp's sites accept whatever comes, so this one listens and accepts itself, on
    aiohttp's public parts only: each connection a DoorRequestHandler made for the
    runner's `server` (common/parser_errors.py, `connection_factory`). Stop it before the
    runner's cleanup, which ends the open connections."""

    def __init__(self, runner: web.BaseRunner, host: str, port: int, slots: Slots,
                 **options: Any) -> None:
        self.runner, self.host, self.slots = runner, host, slots
        self.port = port  # the bound one once started (0 asks the kernel for one)
        self._options = options  # RequestHandler's keyword arguments
        self._listeners: list[socket.socket] = []
        self._accepting: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        make = connection_factory(self.runner, DoorRequestHandler, **self._options)

        def protocol() -> asyncio.Protocol:
            handler = make()
            handler.slots = self.slots
            return handler

        self._listeners = listen(self.host, self.port, BACKLOG)
        self.port = self._listeners[0].getsockname()[1]
        self._accepting = [asyncio.create_task(self._accept(sock, protocol))
                           for sock in self._listeners]

    async def stop(self) -> None:
        for task in self._accepting:
            task.cancel()
        await asyncio.gather(*self._accepting, return_exceptions=True)
        self._accepting = []
        for sock in self._listeners:
            sock.close()
        self._listeners = []

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
