"""Client connections a front lends (common/handover.py): one answer written on each.

The front's door has already admitted the request; the daemon serves the head the front
sent through the same aiohttp server and routes as its own socket, writes the answer on
the client's connection, and gives the connection back once the whole answer is in the
kernel's hands (END, with the answer's status and keep-alive). It never reads the client's
socket: `OneAnswer` pauses reading before the first read, so whatever the client sends
next stays for the front, which reads it after the answer, through its door.

Trust: the hand-over socket is 0600 in the 0700 runtime directory, like the daemon's own,
and a peer of another uid is dropped (its descriptors closed) before anything is read.
At most `cap` lent connections are open at once; one more is answered BUSY, and the front
relays that request as before.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import Any

from aiohttp import web

from llamon_playground.common.handover import (
    BUSY,
    TAKEN,
    TCP_FAMILIES,
    close_all,
    end_message,
    receive,
)
from llamon_playground.common.platform import unix_seqpacket
from llamon_playground.daemon.http.peercred import Handler, socket_peer_uid

log = logging.getLogger(__name__)
ProtocolFactory = Callable[[], asyncio.Protocol]


class OneAnswer(asyncio.Protocol):
    """The server's protocol for one lent connection: fed only the admitted head, never
    reading the socket, and knowing when its answer is written whole."""

    def __init__(self, inner: asyncio.Protocol, head: bytes, count: Callable[[int], None]) -> None:
        self._inner = inner
        self._head = head
        self._count = count
        self.transport: asyncio.Transport | None = None
        # (status, keep_alive) once the answer is flushed; None when it was cut.
        self.finished: asyncio.Future[tuple[int, bool] | None] = (
            asyncio.get_running_loop().create_future())
        self._flushed: asyncio.Future[None] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        transport.pause_reading()  # before the first read: the client's bytes are the front's
        self._count(1)
        self._inner.connection_made(transport)
        self._inner.data_received(self._head)

    def data_received(self, data: bytes) -> None:
        raise AssertionError("a lent connection is never read")

    def eof_received(self) -> bool | None:
        return self._inner.eof_received()

    def connection_lost(self, exc: Exception | None) -> None:
        try:
            self._inner.connection_lost(exc)
        finally:
            self._count(-1)
            self.answered(None)
            self._settle_flush()

    def pause_writing(self) -> None:
        self._inner.pause_writing()

    def resume_writing(self) -> None:
        self._inner.resume_writing()
        self._settle_flush()

    def answered(self, outcome: tuple[int, bool] | None) -> None:
        if not self.finished.done():
            self.finished.set_result(outcome)

    async def flushed(self) -> None:
        """Until every byte written is in the kernel's send buffer."""
        transport = self.transport
        assert transport is not None
        # A zero high-water mark: paused while anything is buffered, resumed when nothing is.
        transport.set_write_buffer_limits(high=0)
        while not transport.is_closing() and transport.get_write_buffer_size():
            self._flushed = asyncio.get_running_loop().create_future()
            await self._flushed
        if transport.is_closing():
            raise ConnectionResetError("the lent connection closed")

    def _settle_flush(self) -> None:
        if self._flushed is not None and not self._flushed.done():
            self._flushed.set_result(None)


@web.middleware
async def answer_once(request: web.Request, handler: Handler) -> web.StreamResponse:
    """On a lent connection: the whole answer, flushed, before the front gets it back."""
    transport = request.transport
    answer = transport.get_protocol() if transport is not None else None
    if not isinstance(answer, OneAnswer):
        return await handler(request)
    try:
        response = await handler(request)
    except BaseException:
        answer.answered(None)
        raise
    try:
        if not response.prepared:
            await response.prepare(request)
        await response.write_eof()
        await answer.flushed()
    except ConnectionError:
        answer.answered(None)  # the client left (aiohttp then writes nothing more)
        return response
    answer.answered((response.status, bool(response.keep_alive)))
    return response


class HandoverListener:
    """Takes loans on `path` and serves each connection with `protocol()`."""

    def __init__(self, path: Path, protocol: ProtocolFactory, cap: int) -> None:
        self.path = path
        self.cap = cap
        self.open = 0  # lent connections not yet given back or closed
        self._starting = 0
        self._protocol = protocol
        self._sock: socket.socket | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    def listen(self) -> None:
        """Bind the hand-over socket (its owner's only) and listen; where SOCK_SEQPACKET is
        missing, nothing: the front relays every answer."""
        with suppress(FileNotFoundError):
            self.path.unlink()  # a dead daemon's (we hold the daemon lock)
        if not unix_seqpacket():  # macOS: no loans, the front relays every answer
            log.info("no SOCK_SEQPACKET Unix sockets here: streams are relayed by the front")
            return
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        old_umask = os.umask(0o077)
        try:
            sock.bind(str(self.path))
        except BaseException:
            sock.close()
            raise
        finally:
            os.umask(old_umask)
        os.chmod(self.path, 0o600)
        sock.listen(64)
        sock.setblocking(False)
        self._sock = sock

    async def serve(self) -> None:
        """Accept until cancelled; the loans in progress are cancelled and awaited."""
        if self._sock is None:  # not listening (see `listen`): nothing to accept, ever
            await asyncio.Event().wait()
        assert self._sock is not None
        loop = asyncio.get_running_loop()
        try:
            while True:
                conn, _ = await loop.sock_accept(self._sock)
                task = asyncio.create_task(self._loan(conn), name="handover")
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
        finally:
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            self._sock.close()
            with suppress(FileNotFoundError):
                self.path.unlink()

    async def _loan(self, conn: socket.socket) -> None:
        with conn:
            conn.setblocking(False)
            uid = socket_peer_uid(conn)
            if uid != os.getuid():
                log.warning("refused a hand-over from uid %d", uid)
                return
            head, fds = await receive(conn)
            if len(fds) != 1 or not head:
                close_all(fds)
                return
            answer = await self._adopt(fds[0], head)
            try:
                conn.send(BUSY if answer is None else TAKEN)
            except OSError:
                pass  # the front is gone: the loan ends below, as if it had let go
            if answer is not None:
                await self._until_given_back(conn, answer)

    async def _adopt(self, fd: int, head: bytes) -> OneAnswer | None:
        try:
            client = socket.socket(fileno=fd)
        except OSError:
            socket.close(fd)
            return None
        if (client.type != socket.SOCK_STREAM or client.family not in TCP_FAMILIES
                or self.open + self._starting >= self.cap):
            client.close()
            return None
        client.setblocking(False)
        answer = OneAnswer(self._protocol(), head, self._count)
        self._starting += 1  # counted in `open` from its connection_made on
        try:
            await asyncio.get_running_loop().connect_accepted_socket(lambda: answer, client)
        except BaseException:
            client.close()
            raise
        finally:
            self._starting -= 1
        return answer

    async def _until_given_back(self, conn: socket.socket, answer: OneAnswer) -> None:
        """END to the front once the answer is whole; or stop writing when the front lets
        go first (GONE, or its side closed). Either way this process's descriptor of the
        client's socket is closed: the connection itself stays the front's."""
        let_go = asyncio.ensure_future(asyncio.get_running_loop().sock_recv(conn, 1))
        either: set[asyncio.Future[Any]] = {answer.finished, let_go}
        try:
            await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
        finally:
            let_go.cancel()
            await asyncio.gather(let_go, return_exceptions=True)
            outcome = answer.finished.result() if answer.finished.done() else None
            assert answer.transport is not None
            if outcome is None:
                answer.transport.abort()  # what was not written never will be
            else:
                answer.transport.close()  # nothing is buffered: it was flushed
        if outcome is not None:
            with suppress(OSError):
                conn.send(end_message(*outcome))

    def _count(self, change: int) -> None:
        self.open += change
