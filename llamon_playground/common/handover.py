"""Passing a client's connection from the front to the daemon: the wire both sides speak.

A stream relayed through the front costs every event a second trip through a second
process (read from the daemon, write to the client, two more wake-ups), and that trip was
most of what a stream through the front cost over one read straight from the daemon. So
once the front's door has admitted a stream request, the front passes the client's TCP
socket itself to the daemon, with the request head it would have relayed, and the daemon
answers on it directly (daemon/http/adopt.py says what the daemon does with it).

The wire: a SOCK_SEQPACKET Unix socket in the private runtime directory, one connection
per hand-over. The front sends one message, the head, with the socket as SCM_RIGHTS
ancillary data; the daemon sends one byte back: TAKEN (it answers on the socket; the
front closes its own descriptor and writes nothing more) or BUSY (it kept nothing; the
front relays the request as before). A message the daemon did not read whole, or from a
process of another uid, is dropped with its descriptors.
"""

from __future__ import annotations

import asyncio
import enum
import socket

TAKEN = b"T"
BUSY = b"B"
MAX_MESSAGE = 64 * 1024  # a request head; the front's own limit on a head is smaller
REPLY_TIMEOUT = 5.0


class Outcome(enum.Enum):
    NOT_SENT = "not sent"  # the daemon never saw the socket: relay as before
    BUSY = "busy"  # the daemon saw it and kept nothing: relay as before
    TAKEN = "taken"  # the daemon answers on it
    UNKNOWN = "unknown"  # sent, but no clear reply: the daemon may hold it, so never answer


async def offer(path: str, fd: int, head: bytes) -> Outcome:
    """Offer the connection `fd` (with the request `head`) to the daemon listening at `path`."""
    loop = asyncio.get_running_loop()
    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as ctl:
        ctl.setblocking(False)
        try:
            await loop.sock_connect(ctl, path)
            # A fresh connection's send buffer is empty: one message this size never blocks.
            socket.send_fds(ctl, [head], [fd])
        except OSError:
            return Outcome.NOT_SENT
        try:
            reply = await asyncio.wait_for(loop.sock_recv(ctl, 1), REPLY_TIMEOUT)
        except (OSError, TimeoutError):
            return Outcome.UNKNOWN
    return {TAKEN: Outcome.TAKEN, BUSY: Outcome.BUSY}.get(reply, Outcome.UNKNOWN)


async def receive(sock: socket.socket) -> tuple[bytes, list[int]]:
    """One message and the descriptors that came with it, from a non-blocking `sock`.
    A cut message or cut ancillary data gives no descriptors back (those that came are
    closed): half a head is never served."""
    loop = asyncio.get_running_loop()
    while True:
        try:
            data, fds, flags, _ = socket.recv_fds(sock, MAX_MESSAGE, 4)
        except BlockingIOError:
            await _readable(loop, sock)
            continue
        if flags & (socket.MSG_TRUNC | socket.MSG_CTRUNC):
            close_all(fds)
            return b"", []
        return data, fds


def close_all(fds: list[int]) -> None:
    for fd in fds:
        socket.close(fd)


async def _readable(loop: asyncio.AbstractEventLoop, sock: socket.socket) -> None:
    ready: asyncio.Future[None] = loop.create_future()

    def settle() -> None:
        if not ready.done():
            ready.set_result(None)

    loop.add_reader(sock.fileno(), settle)
    try:
        await ready
    finally:
        loop.remove_reader(sock.fileno())
