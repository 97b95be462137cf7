"""Lending a client's connection from the front to the daemon: the wire both sides speak.

A stream relayed through the front costs every event a second trip through a second
process (read from the daemon, write to the client, two more wake-ups), and that trip was
most of what a stream through the front cost over one read straight from the daemon. So
once the front's door has admitted a stream request, the front lends the client's TCP
socket to the daemon for that one answer: the daemon writes the answer on it directly
(daemon/http/adopt.py), then gives it back, and the front serves whatever the client asks
next on the same connection, through its door as always.

The front keeps the connection throughout: it holds its own descriptor, keeps reading
(a request pipelined behind the stream waits in the front, in order), and notices when the
client leaves. The daemon only writes; it never reads a byte of the client's.

The wire: a SOCK_SEQPACKET Unix socket in the private runtime directory, one connection
per loan, one message at a time:
- front → daemon: the request head the front would have relayed, with the client's socket
  as SCM_RIGHTS ancillary data;
- daemon → front: TAKEN (it answers) or BUSY (it kept nothing: the front relays as before);
- after TAKEN, daemon → front: END with the answer's status and whether the connection
  may carry another request, once the whole answer is in the kernel's hands;
- after TAKEN, front → daemon: GONE when the front lets go first (the client left, or the
  front is stopping). Any end of the loan's socket counts as the same: a front that dies
  takes its streams with it, and a daemon that dies leaves the front to close the client's
  connection (its answer was cut).
A message the daemon did not read whole, or from a process of another uid, is dropped
with its descriptors.
"""

from __future__ import annotations

import asyncio
import enum
import socket
from dataclasses import dataclass

from llamon_playground.common.http_json import decimal_digits

TAKEN = b"T"
BUSY = b"B"
GONE = b"G"
END = b"E"  # + three status digits + KEEP or CLOSE
KEEP = b"K"
CLOSE = b"C"
MAX_MESSAGE = 64 * 1024  # a request head; the front's own limit on a head is smaller
REPLY_TIMEOUT = 5.0
TCP_FAMILIES = (socket.AF_INET, socket.AF_INET6)  # the only sockets a front lends


class Outcome(enum.Enum):
    """How the handing over of a connection ended; only NOT_SENT and BUSY let the front relay
    the request itself."""

    NOT_SENT = "not sent"  # the daemon never saw the socket: relay as before
    BUSY = "busy"  # the daemon saw it and kept nothing: relay as before
    TAKEN = "taken"  # the daemon answers on it
    UNKNOWN = "unknown"  # sent, but no clear reply: the daemon may hold it, so the front
    # writes nothing more on the connection and closes it


@dataclass(frozen=True)
class End:
    """How a loan ended, as the front sees it."""

    status: int  # the answer's, for the front's log; 0 when it never came whole
    keep_alive: bool  # False: the front closes the client's connection


CUT = End(0, False)


def end_message(status: int, keep_alive: bool) -> bytes:
    """The control message that ends a loan: the answer's status and whether the connection stays
    open."""
    return END + b"%03d" % status + (KEEP if keep_alive else CLOSE)


def parse_end(message: bytes) -> End:
    digits = message[1:4].decode("ascii", "replace")
    if (len(message) != 5 or message[:1] != END or not decimal_digits(digits)
            or message[4:] not in (KEEP, CLOSE)):
        return CUT
    return End(int(digits), message[4:] == KEEP)


class Loan:
    """The front's side of one loan: its socket to the daemon."""

    def __init__(self, ctl: socket.socket) -> None:
        self._ctl = ctl

    @classmethod
    async def offer(cls, path: str, fd: int, head: bytes) -> tuple[Outcome, Loan | None]:
        """Offer the connection `fd` (with the request `head`) to the daemon at `path`.
        The Loan comes back with TAKEN only: its owner must close it."""
        loop = asyncio.get_running_loop()
        try:
            ctl = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        except OSError:  # a system without them (macOS): never lent, relayed
            return Outcome.NOT_SENT, None
        ctl.setblocking(False)
        loan = cls(ctl)
        try:
            try:
                await loop.sock_connect(ctl, path)
                # A fresh connection's send buffer is empty: one message this size never blocks.
                socket.send_fds(ctl, [head], [fd])
            except OSError:
                loan.close()
                return Outcome.NOT_SENT, None
            try:
                reply = await asyncio.wait_for(loop.sock_recv(ctl, 1), REPLY_TIMEOUT)
            except (OSError, TimeoutError):
                reply = b""
        except BaseException:
            loan.close()
            raise
        if reply == TAKEN:
            return Outcome.TAKEN, loan
        if reply != BUSY:
            loan.let_go()  # should the daemon hold it after all, it stops writing
        loan.close()
        return (Outcome.BUSY if reply == BUSY else Outcome.UNKNOWN), None

    async def end(self) -> End:
        """Wait for the daemon's END (CUT if its side closes first)."""
        try:
            message = await asyncio.get_running_loop().sock_recv(self._ctl, 16)
        except OSError:
            return CUT
        return parse_end(message)

    def let_go(self) -> None:
        """Tell the daemon to stop writing (it may already have stopped)."""
        try:
            self._ctl.send(GONE)
        except OSError:
            pass

    def close(self) -> None:
        """Close the loan's control socket (the front then knows the stream is over)."""
        self._ctl.close()


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
    """Close every file descriptor in `fds`."""
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
