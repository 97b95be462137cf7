"""The front's connections: a cap, an idle timeout, and a quiet accept loop.

A browser tab, a stuck client or a flood can open connections and send nothing. Without a
limit each one keeps a file descriptor for ever; at the open-files limit `accept()` fails
and asyncio logs a traceback for every retry, while nobody gets an answer. So:
- a connection with no request in progress is closed after `idle_timeout` seconds, a new one
  still sending its headers included (aiohttp's keep-alive timer runs from the connection's
  start: `keepalive_timeout`); a running request (an SSE stream) is never cut;
- at most `cap` connections are served at once, fewer than the open-files limit allows (each
  relayed request holds a second descriptor, to the daemon): one more is served only to
  take the place of the oldest connection the door has not admitted yet and whose grace
  is over (api/slots.py), and waits in the kernel's queue or the Lobby until there is one
  (one that asks for no stream first); when the door admitted every one, it is answered
  `503 too_many_connections` and closed at once;
- the lobby lets only a few connections asking for a stream be judged at once
  (api/slots.py, JUDGING), so a burst of them keeps the loop's turns short;
- the kernel queues up to BACKLOG connections not yet accepted: past that it drops a new
  client's SYN, which that client sends again only a second later, so a flood of a few
  hundred sockets must not fill the queue;
- an accept that fails for want of descriptors is one warning line every few seconds.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import resource
import socket
import time
from collections.abc import Callable
from typing import Any

from aiohttp import web

from llamon_playground.api.slots import BURST, DoorRequestHandler, Slots
from llamon_playground.common.fd_budget import RESERVED_FDS
from llamon_playground.common.parser_errors import connection_factory
from llamon_playground.common.wire.routes import front_routes

log = logging.getLogger(__name__)

WARN_EVERY = 10.0  # seconds between two "out of descriptors" warnings
RESOURCE_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})
# Connections the kernel holds for accept() (clamped to net.core.somaxconn, 4096 on current
# kernels). aiohttp's 128 let a 300-socket reconnect flood fill the queue: the token holder's
# SYN was dropped and its /health took 1 s more (docs/benchmarks.md, the door's floods).
BACKLOG = 1024
ACCEPT_RETRY = 1.0  # seconds before accept() is tried again when descriptors ran out
# Seconds the accepting waits at most, with nothing it may serve, before it looks again
# (it is woken at once by a new connection, a head judged, or a stream's connection judged).
RECHECK = 0.1


class CappedSite:
    """The front's listening site: it serves a connection only when the front's Slots have
    room for it (api/slots.py): a free slot, one a ripe pending connection gives up, or,
    when every slot is admitted, to refuse it (503). While pending ones are still in their
    grace, new ones wait in the kernel's queue or, accepted, in the Lobby, where a request
    that asks for no stream goes first: the flood behind them waits too, and the front's
    work stays bounded by what ripens.

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
        lobby = Lobby(lobby_size(self.slots.cap), judged=self.slots.poke)
        try:
            while True:
                room = await self.slots.room()
                try:
                    if not lobby.waiting:
                        lobby.add((await loop.sock_accept(listener))[0])
                    lobby.fill(listener)  # the rest of a burst, without a wait
                except (BlockingIOError, InterruptedError):
                    pass
                except OSError as exc:
                    if exc.errno in RESOURCE_ERRNOS:
                        loop.call_exception_handler({"message": "accept failed",
                                                     "exception": exc})
                        if not lobby.waiting:
                            await asyncio.sleep(ACCEPT_RETRY)  # descriptors free slowly
                    else:  # one connection's trouble (ECONNABORTED...): the next is accepted
                        log.debug("accept failed: %s", exc)
                conns = lobby.take(room, self.slots.stream_room())
                if not conns:  # none waits, or streams only, with JUDGING being judged
                    await self._until_changed(loop, listener if len(lobby.waiting) < lobby.size
                                              else None)
                    continue
                served = await asyncio.gather(*(_serve(loop, conn, protocol)
                                                for conn, _ in conns))
                for (_, kind), handler in zip(conns, served, strict=True):
                    if kind == STREAM and isinstance(handler, DoorRequestHandler):
                        self.slots.asks_stream(handler)
        finally:
            lobby.close()

    async def _until_changed(self, loop: asyncio.AbstractEventLoop,
                             listener: socket.socket | None) -> None:
        """Until a connection comes to `listener` (None: the lobby has no room for one), or
        the lobby or the slots have news; RECHECK at most."""
        if listener is None:
            await self.slots.changed(RECHECK)
            return
        loop.add_reader(listener.fileno(), self.slots.poke)
        try:
            await self.slots.changed(RECHECK)
        finally:
            loop.remove_reader(listener.fileno())


OTHER, STREAM, UNSEEN = "other", "stream", "unseen"
LOBBY = BACKLOG  # connections waiting for a slot in the lobby at most (open files permitting)
PEEK = 4096  # bytes of a head looked at; a longer one is not judged (it waits its turn)


def lobby_size(cap: int) -> int:
    """How many connections may wait in the lobby: what the open-files limit leaves once
    every slot holds its two descriptors."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return LOBBY
    return max(BURST, min(LOBBY, soft - RESERVED_FDS - 2 * cap))


def head_kind(head: bytes) -> str:
    """What a request head asks for, as far as the slots care: a stream (api/handover.py),
    anything else, or UNSEEN when no whole head has come yet."""
    if b"\r\n\r\n" not in head:
        return UNSEEN
    method, _, rest = head.partition(b" ")
    target = rest.partition(b" ")[0].decode("latin-1")
    path, _, query = target.partition("?")
    names = frozenset(item.partition("=")[0] for item in query.split("&") if item)
    stream = front_routes().is_stream(method.decode("latin-1"), path, names)
    return STREAM if stream else OTHER


class Lobby:
    """Accepted connections waiting for a slot, each judged once by the head it had sent
    when accepted: a slot goes first to a connection whose whole head asks for no stream
    (the token holder's REST calls and probes), then to the others, oldest first.

    Without it, a burst of streams (a page opening many, or a client in a loop) queues in
    the kernel ahead of everything else, and each must be served (and past the stream cap,
    refused) before a request behind it is even read."""

    def __init__(self, size: int, judged: Callable[[], None] | None = None) -> None:
        self.size = size
        self._judged = judged  # told when a head that came after the accept was judged
        self.waiting: dict[socket.socket, str] = {}  # insertion order is age
        # Connections that had sent nothing when accepted (a client's head may be on its
        # way): judged once when their first bytes come.
        self._silent: set[socket.socket] = set()

    def add(self, conn: socket.socket) -> None:
        """An accepted connection waits, judged by what it has sent (a peek: the bytes stay
        for the server); one already closed by its client is closed and forgotten."""
        conn.setblocking(False)
        self.waiting[conn] = UNSEEN
        if not self._judge(conn):
            self._silent.add(conn)
            asyncio.get_running_loop().add_reader(conn.fileno(), self._spoke, conn)

    def _judge(self, conn: socket.socket) -> bool:
        """Judge `conn` by what it sent; False when it has sent nothing yet."""
        try:
            head = conn.recv(PEEK, socket.MSG_PEEK)
        except (BlockingIOError, InterruptedError):
            return False
        except OSError:
            head = b""
        if head:
            self.waiting[conn] = head_kind(head)
        else:  # gone before it said anything
            del self.waiting[conn]
            conn.close()
        return True

    def _spoke(self, conn: socket.socket) -> None:
        self._quiet(conn)
        if conn not in self.waiting:
            return
        if not self._judge(conn):
            self._silent.add(conn)  # woken for nothing: wait for its bytes again
            asyncio.get_running_loop().add_reader(conn.fileno(), self._spoke, conn)
        elif self._judged is not None:
            self._judged()

    def _quiet(self, conn: socket.socket) -> None:
        """No more watching `conn` (before anything else reads it or it closes)."""
        if conn in self._silent:
            self._silent.discard(conn)
            asyncio.get_running_loop().remove_reader(conn.fileno())

    def close(self) -> None:
        """Close every connection still waiting (the site stops)."""
        for conn in self.waiting:
            self._quiet(conn)
            conn.close()
        self.waiting.clear()

    def fill(self, listener: socket.socket) -> None:
        """Accept what the kernel holds, up to the lobby's size (BlockingIOError when it
        holds no more)."""
        while len(self.waiting) < self.size:
            self.add(listener.accept()[0])

    def take(self, count: int, streams: int | None = None) -> list[tuple[socket.socket, str]]:
        """Up to `count` connections to serve now, each with its kind: the ones asking for
        no stream first, then the others oldest first, of those asking for a stream no
        more than `streams` (None: any number)."""
        taken = [(conn, kind) for conn, kind in self.waiting.items() if kind == OTHER][:count]
        if len(taken) < count:
            for conn, kind in self.waiting.items():
                if len(taken) == count:
                    break
                if kind == STREAM:
                    if streams == 0:
                        continue
                    if streams is not None:
                        streams -= 1
                if kind != OTHER:
                    taken.append((conn, kind))
        for conn, _ in taken:
            self._quiet(conn)  # its server reads it now
            del self.waiting[conn]
        return taken


async def _serve(loop: asyncio.AbstractEventLoop, conn: socket.socket,
                 protocol: Callable[[], asyncio.Protocol]) -> asyncio.BaseProtocol | None:
    """Serve `conn`: its connection handler, or None if it could not be made."""
    conn.setblocking(False)
    try:
        return (await loop.connect_accepted_socket(protocol, conn))[1]
    except OSError:  # the client left before its transport was made
        conn.close()
    except Exception:  # a bug in making one connection must not stop the accepting
        log.exception("could not serve an accepted connection")
        conn.close()
    return None


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
