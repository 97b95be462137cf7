"""Client connections the front hands over (common/handover.py): each answered once, here.

The front's door has already admitted the request; the daemon serves the head the front
sent (never a byte read from the socket itself: `OneRequest` drops whatever the client
sends), with `Connection: close`, through the same aiohttp server and routes as its own
socket, then closes the connection. So a request pipelined behind the stream, which the
door never saw, is never served, and the front keeps nothing of the connection: the stream
goes on when the front stops.

Trust: the hand-over socket is 0600 in the 0700 runtime directory, like the daemon's own,
and a peer of another uid is dropped (its descriptors closed) before anything is read.
At most `cap` handed-over connections are open at once; one more is answered BUSY, and the
front relays that request as it did before.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path

from llamon_playground.common.handover import BUSY, TAKEN, close_all, receive
from llamon_playground.daemon.http.peercred import UCRED

log = logging.getLogger(__name__)
ProtocolFactory = Callable[[], asyncio.Protocol]
TCP_FAMILIES = (socket.AF_INET, socket.AF_INET6)


class OneRequest(asyncio.Protocol):
    """The server's protocol for one handed-over connection, fed only the admitted head."""

    def __init__(self, inner: asyncio.Protocol, head: bytes, count: Callable[[int], None]) -> None:
        self._inner = inner
        self._head = head
        self._count = count

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._count(1)
        self._inner.connection_made(transport)
        self._inner.data_received(self._head)

    def data_received(self, data: bytes) -> None:
        pass  # the door has not seen it: never parsed, never served

    def eof_received(self) -> bool | None:
        return self._inner.eof_received()

    def connection_lost(self, exc: Exception | None) -> None:
        try:
            self._inner.connection_lost(exc)
        finally:
            self._count(-1)

    def pause_writing(self) -> None:
        self._inner.pause_writing()

    def resume_writing(self) -> None:
        self._inner.resume_writing()


class HandoverListener:
    """Accepts hand-overs on `path` and serves each connection with `protocol()`."""

    def __init__(self, path: Path, protocol: ProtocolFactory, cap: int) -> None:
        self.path = path
        self.cap = cap
        self.open = 0  # handed-over connections not yet closed
        self._starting = 0
        self._protocol = protocol
        self._sock: socket.socket | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    def listen(self) -> None:
        with suppress(FileNotFoundError):
            self.path.unlink()  # a dead daemon's (we hold the daemon lock)
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
        """Accept until cancelled; the hand-overs in progress are awaited or cancelled."""
        assert self._sock is not None
        loop = asyncio.get_running_loop()
        try:
            while True:
                conn, _ = await loop.sock_accept(self._sock)
                task = asyncio.create_task(self._take(conn), name="handover")
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
        finally:
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            self._sock.close()
            with suppress(FileNotFoundError):
                self.path.unlink()

    async def _take(self, conn: socket.socket) -> None:
        with conn:
            conn.setblocking(False)
            _pid, uid, _gid = UCRED.unpack(conn.getsockopt(socket.SOL_SOCKET,
                                                           socket.SO_PEERCRED, UCRED.size))
            if uid != os.getuid():
                log.warning("refused a hand-over from uid %d", uid)
                return
            head, fds = await receive(conn)
            if len(fds) != 1 or not head:
                close_all(fds)
                return
            reply = await self._adopt(fds[0], head)
            with suppress(OSError):
                conn.send(reply)

    async def _adopt(self, fd: int, head: bytes) -> bytes:
        try:
            client = socket.socket(fileno=fd)
        except OSError:
            socket.close(fd)
            return BUSY
        if (client.type != socket.SOCK_STREAM or client.family not in TCP_FAMILIES
                or self.open + self._starting >= self.cap):
            client.close()
            return BUSY
        client.setblocking(False)
        client.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 22)
        self._starting += 1  # counted in `open` from its connection_made on
        try:
            await asyncio.get_running_loop().connect_accepted_socket(
                lambda: OneRequest(self._protocol(), head, self._count), client)
        except BaseException:
            client.close()
            raise
        finally:
            self._starting -= 1
        return TAKEN

    def _count(self, change: int) -> None:
        self.open += change
