"""The relay's own HTTP/1.1 client to the daemon's Unix socket: pooled, and byte-for-byte.

A relayed request is one write of its head (and body, when small) on a kept-alive
connection; the answer's head is parsed for its status, its headers and its framing only
(Content-Length, chunked, or up to the close), and its body is handed over as the bytes
that arrived, chunk framing included: the front passes them on without decoding them.

Reading follows the consumer: past HIGH_WATER bytes not yet taken, the connection stops
reading the socket (the daemon's writes then wait on its side), so a slow client costs the
front a bounded buffer, never the whole answer.

A connection goes back to the pool only after a complete answer with nothing extra behind
it; one the daemon closed (its keep-alive timeout, a restart) leaves the pool the moment
the close is seen.

Its reading is checked against h11's on generated answers; why the front has a client of
its own at all, and how to run it without: docs/front-transport.md.
"""

from __future__ import annotations

import asyncio
import collections
from dataclasses import dataclass

from llamon_playground.common.http_json import decimal_digits

HIGH_WATER = 256 * 1024  # body bytes held for the consumer before reading pauses
LOW_WATER = 64 * 1024
MAX_HEAD = 64 * 1024
MAX_IDLE = 32  # idle connections kept; never more than the relays that ran at once
CONNECT_TIMEOUT = 5.0
NO_BODY_STATUSES = frozenset({204, 304})
HEX_DIGITS = b"0123456789abcdefABCDEF"
OWS = " \t"
CRLF = b"\r\n"


class UpstreamError(Exception):
    """The daemon's answer did not come whole."""


class UpstreamClosed(UpstreamError, ConnectionError):
    """The daemon closed the connection before its answer was complete."""


class BadAnswer(UpstreamError):
    """The daemon's bytes are not an HTTP/1.1 answer (a bug, not an outage). The message
    quotes the offending bytes whole (at most a head's size): the log's scrubbing finds a
    secret only where it is whole, so never cut them short."""


@dataclass(frozen=True)
class Head:
    """An answer's status line and headers, and the framing that says where its body ends."""

    status: int
    reason: str
    headers: list[tuple[str, str]]
    length: int | None  # Content-Length; None when chunked or read to the close
    chunked: bool
    keep_alive: bool  # HTTP/1.1 unless `Connection: close`; HTTP/1.0 only if it says so


def parse_head(raw: bytes) -> Head:
    """The status line and headers of an answer (no blank line at the end)."""
    lines = raw.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if (len(parts) < 2 or not parts[0].startswith("HTTP/1.") or len(parts[1]) != 3
            or not decimal_digits(parts[1])):
        raise BadAnswer(f"not an HTTP/1.x status line: {lines[0]!r}")
    headers = []
    length: int | None = None
    chunked = False
    connection = ""
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if not sep:
            raise BadAnswer(f"not a header line: {line!r}")
        # Only spaces and tabs pad a value: str.strip() would also take \x85 or \xa0 off it.
        name, value = name.strip(OWS), value.strip(OWS)
        lower = name.lower()
        if lower == "content-length":
            if not decimal_digits(value) or (length is not None and int(value) != length):
                raise BadAnswer(f"bad or conflicting Content-Length {value!r}")
            length = int(value)
        elif lower == "transfer-encoding":
            # The daemon frames with chunked alone; anything else, or twice, is not its answer.
            if chunked or value.lower() != "chunked":
                raise BadAnswer(f"unexpected Transfer-Encoding {value!r}")
            chunked = True
        elif lower == "connection":
            connection = value.lower()
        headers.append((name, value))
    if chunked:
        length = None
    keep_alive = (connection != "close" if parts[0] == "HTTP/1.1"
                  else connection == "keep-alive")
    return Head(int(parts[1]), parts[2] if len(parts) > 2 else "", headers, length, chunked,
                keep_alive)


class ChunkedEnd:
    """Finds where a chunked body ends, fed its bytes as they come; decodes nothing, but
    checks the framing a client will decode (sizes in hex, each chunk ended by CRLF)."""

    def __init__(self) -> None:
        self._left = 0  # payload bytes still to pass over
        self._crlf = b""  # what is still to come of the CRLF that ends a chunk
        self._line = b""  # a size or trailer line cut by a read
        self._trailer = False

    def feed(self, data: bytes) -> int:
        """How many bytes of `data` belong to the body; fewer than all means it ended."""
        pos, size = 0, len(data)
        while pos < size:
            if self._left:
                step = min(self._left, size - pos)
                pos += step
                self._left -= step
                continue
            if self._crlf:
                got = data[pos:pos + len(self._crlf)]
                if got != self._crlf[:len(got)]:
                    raise BadAnswer(f"a chunk not ended by CRLF: {got!r}")
                self._crlf = self._crlf[len(got):]
                pos += len(got)
                continue
            eol = data.find(b"\n", pos)
            if eol < 0:
                self._line += data[pos:]
                if len(self._line) > MAX_HEAD:
                    raise BadAnswer("a chunk size line without an end")
                return size
            line = (self._line + data[pos:eol]).strip()
            self._line = b""
            pos = eol + 1
            if self._trailer:
                if not line:
                    return -pos  # the blank line after the last chunk: the end
                continue
            size_text = line.split(b";", 1)[0].rstrip()
            # Hex digits only: int() would also take "-1", "0x1a" or "1_0".
            if not size_text or size_text.strip(HEX_DIGITS):
                raise BadAnswer(f"bad chunk size line {line!r}")
            length = int(size_text, 16)
            if length == 0:
                self._trailer = True
            else:
                self._left, self._crlf = length, CRLF
        return size


class Connection(asyncio.Protocol):
    """One connection to the daemon, carrying one exchange at a time."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        # Kept: asyncio.get_running_loop() costs a getpid() system call each time.
        self._loop = asyncio.get_running_loop()
        self.lost = False
        self.used = 0  # exchanges begun on it: a reused one may have been closed under us
        self._head_buf = bytearray()
        self._head: Head | None = None
        self._expect_body = True
        self._done = True  # no exchange in progress
        self._remaining = 0
        self._chunked: ChunkedEnd | None = None
        self._to_close = False  # the answer ends when the daemon closes
        self._keep = True
        self._chunks: collections.deque[bytes] = collections.deque()
        self._buffered = 0
        self._paused = False
        self._waiter: asyncio.Future[None] | None = None
        self._write_paused = False
        self._drain: asyncio.Future[None] | None = None
        self._error: UpstreamError | None = None

    # -- asyncio callbacks ------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        if not self._done and self._error is None:
            if self._head is not None and self._to_close:
                self._done = True  # a body that runs to the close ended normally
            else:
                self._error = UpstreamClosed(
                    f"the daemon closed the connection{': ' + str(exc) if exc else ''}")
        self._wake()
        if self._drain is not None and not self._drain.done():
            self._drain.set_result(None)

    def pause_writing(self) -> None:
        self._write_paused = True

    def resume_writing(self) -> None:
        self._write_paused = False
        if self._drain is not None and not self._drain.done():
            self._drain.set_result(None)

    def data_received(self, data: bytes) -> None:
        if self._done or self._error is not None:
            self._fail(BadAnswer("the daemon sent bytes nobody asked for"))
            return
        if self._head is None:
            self._head_buf += data
            end = self._head_buf.find(b"\r\n\r\n")
            if end < 0:
                if len(self._head_buf) > MAX_HEAD:
                    self._fail(BadAnswer("an answer head without an end"))
                return
            try:
                self._head = head = parse_head(bytes(self._head_buf[:end]))
            except BadAnswer as exc:
                self._fail(exc)
                return
            data = bytes(self._head_buf[end + 4:])
            self._head_buf.clear()
            if not head.keep_alive:
                self._keep = False
            if not self._expect_body or head.status in NO_BODY_STATUSES or head.status < 200:
                self._remaining = 0
            elif head.chunked:
                self._chunked = ChunkedEnd()
            elif head.length is not None:
                self._remaining = head.length
            else:
                self._to_close = True
                self._keep = False
            if self._chunked is None and not self._to_close and not self._remaining:
                self._done = True
            self._wake()
            if not data:
                return
            if self._done:
                self._fail(BadAnswer("the daemon sent bytes after a bodiless answer"))
                return
        self._take(data)

    def eof_received(self) -> bool:
        return False  # close our side too: connection_lost follows

    # -- the exchange --------------------------------------------------------------------

    def begin(self, request: bytes, expect_body: bool = True) -> None:
        """Start an exchange: write the request's head (and body, if given with it)."""
        assert self._done and self.transport is not None
        self.used += 1
        self._head, self._expect_body, self._done = None, expect_body, False
        self._remaining, self._chunked, self._to_close = 0, None, False
        self.transport.write(request)

    def write(self, data: bytes) -> None:
        """More of the request body (framed by the caller)."""
        if self.transport is not None and not self.lost:
            self.transport.write(data)

    async def drain(self) -> None:
        """Wait while the socket's send buffer is full. A lost connection returns at once:
        what the daemon answered (or that it did not) tells the caller what happened."""
        while self._write_paused and not self.lost:
            self._drain = self._loop.create_future()
            await self._drain

    async def head(self) -> Head:
        while self._head is None:
            if self._error is not None:
                raise self._error
            await self._wait()
        return self._head

    async def read(self) -> bytes:
        """The body's next bytes as they arrived (chunk framing included); b"" at its end."""
        while not self._chunks:
            if self._error is not None:
                raise self._error
            if self._done:
                return b""
            await self._wait()
        data = self._chunks.popleft() if len(self._chunks) == 1 else b"".join(self._chunks)
        self._chunks.clear()
        self._buffered -= len(data)
        if self._paused and self._buffered <= LOW_WATER and self.transport is not None:
            self._paused = False
            self.transport.resume_reading()
        return data

    async def read_all(self) -> bytes:
        parts = []
        while data := await self.read():
            parts.append(data)
        return b"".join(parts)

    @property
    def complete(self) -> bool:
        """The whole answer has arrived (it may still wait to be read)."""
        return self._done

    @property
    def failure(self) -> UpstreamError | None:
        """Why the answer will not come whole, once that is known."""
        return self._error

    @property
    def reusable(self) -> bool:
        return (self._done and self._error is None and self._keep and not self.lost
                and self.transport is not None and not self.transport.is_closing())

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()

    # -- inside -----------------------------------------------------------------------------

    def _take(self, data: bytes) -> None:
        size = len(data)
        if self._chunked is not None:
            try:
                used = self._chunked.feed(data)
            except BadAnswer as exc:
                self._fail(exc)
                return
            if used <= 0:  # the last chunk's end, at byte -used
                self._done = True
                used = -used
        elif self._to_close:
            used = size
        else:
            used = min(size, self._remaining)
            self._remaining -= used
            self._done = not self._remaining
        if used < size:
            self._keep = False  # bytes past the answer's end: the connection is not trusted
            data = data[:used]
        if data:
            self._chunks.append(data)
            self._buffered += len(data)
            if (self._buffered > HIGH_WATER and not self._paused and not self._done
                    and self.transport is not None):
                self._paused = True
                self.transport.pause_reading()
        self._wake()

    def _fail(self, error: UpstreamError) -> None:
        if self._error is None and not self._done:
            self._error = error
        self._keep = False
        self._wake()
        self.close()

    async def _wait(self) -> None:
        self._waiter = self._loop.create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)


class Pool:
    """Kept-alive connections to the daemon's socket, last used first."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._idle: list[Connection] = []
        self.opened = 0  # connections opened so far (tests and logs read it)

    async def acquire(self, fresh: bool = False) -> Connection:
        while self._idle and not fresh:
            conn = self._idle.pop()
            if conn.reusable:
                return conn
            conn.close()
        loop = asyncio.get_running_loop()
        async with asyncio.timeout(CONNECT_TIMEOUT):
            _, conn = await loop.create_unix_connection(Connection, self.path)
        self.opened += 1
        return conn

    def release(self, conn: Connection) -> None:
        """Back to the pool after a complete answer; anything else is closed."""
        if conn.reusable and len(self._idle) < MAX_IDLE:
            self._idle.append(conn)
        else:
            conn.close()

    def close(self) -> None:
        for conn in self._idle:
            conn.close()
        self._idle.clear()
