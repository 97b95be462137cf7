"""The benchmark's one raw HTTP/1.1 SSE client, with its one chunked-transfer decoder.

Raw (an asyncio.Protocol, no HTTP library) so that it measures the server, not a client parser,
and stays cheap enough for hundreds of clients in one process. The same decoder reads the
bytes the slow client collects on a blocking socket.
"""

from __future__ import annotations

import asyncio
import itertools
import re
import time
from dataclasses import dataclass, field

from llamon_playground.common.contract import API_PREFIX, TERMINAL_STATUSES

FRAME_RE = re.compile(rb"id: (\d+)\nevent: ([^\n]*)\n")
TERMINAL_MARKERS = tuple(f'"status":"{s}"'.encode() for s in sorted(TERMINAL_STATUSES))


class Dechunker:
    """HTTP/1.1 chunked transfer decoding, fed as bytes arrive."""

    def __init__(self) -> None:
        self._raw = bytearray()
        self._remaining = 0
        self._need_crlf = False
        self.complete = False  # the zero-length chunk (end of the answer) arrived

    def feed(self, data: bytes, out: bytearray) -> None:
        """Decode what `data` completes and append the payload bytes to `out`."""
        raw = self._raw
        raw += data
        while raw and not self.complete:
            if self._remaining:
                take = min(self._remaining, len(raw))
                out += raw[:take]
                del raw[:take]
                self._remaining -= take
                if not self._remaining:
                    self._need_crlf = True
            elif self._need_crlf:
                if len(raw) < 2:
                    return
                del raw[:2]
                self._need_crlf = False
            else:
                eol = raw.find(b"\r\n")
                if eol < 0:
                    return
                size = int(bytes(raw[:eol]).split(b";")[0], 16)
                del raw[:eol + 2]
                if size == 0:
                    self.complete = True
                    return
                self._remaining = size


class Response:
    """An HTTP/1.1 answer decoded as its bytes arrive: the head, then the body in `body`."""

    def __init__(self) -> None:
        self._head = bytearray()
        self.head_done = False
        self.status: int | None = None
        self.chunked = False
        self.first_body_bytes = b""  # as they came after the head (still chunk-encoded)
        self.body = bytearray()
        self._dechunker = Dechunker()

    @property
    def complete(self) -> bool:
        """The end of a chunked body arrived (an unchunked one ends when the peer closes)."""
        return self._dechunker.complete

    def feed(self, data: bytes) -> bool:
        """Take the next bytes; True when they completed the head."""
        headed = False
        if not self.head_done:
            self._head += data
            end = self._head.find(b"\r\n\r\n")
            if end < 0:
                return False
            head = bytes(self._head[:end])
            data = bytes(self._head[end + 4:])
            self.head_done = headed = True
            self.status = int(head.split(b" ", 2)[1])
            self.chunked = b"transfer-encoding: chunked" in head.lower()
            self.first_body_bytes = data
        if self.chunked:
            self._dechunker.feed(data, self.body)
        else:
            self.body += data
        return headed


class SseFrames:
    """Complete frames cut off the front of a growing SSE body: every id in order.

    The text of a frame is dropped once parsed (one regex per read). `timed` also keeps each
    frame's kind and arrival: the time of the read that completed it, and whether that was the
    first read with body bytes (a replayed backlog rather than a live event).
    """

    def __init__(self, timed: bool = False) -> None:
        self.timed = timed
        self.seqs: list[int] = []
        self.kinds: list[str] = []
        self.arrivals: list[tuple[float, bool]] = []
        self.last_kind = b""
        self.last_frame = b""
        self.nbytes = 0
        self.t_first: float | None = None
        self.t_last: float | None = None
        self._reads = 0

    def scan(self, pending: bytearray, arrived: float) -> None:
        """Take the complete frames out of `pending` (the bytes read at `arrived`)."""
        if not pending:
            return
        first_read = self._reads == 0
        self._reads += 1
        end = pending.rfind(b"\n\n")
        if end < 0:
            return
        end += 2
        block = bytes(pending[:end])
        del pending[:end]
        self.nbytes += len(block)
        found = FRAME_RE.findall(block)
        if not found:
            return
        if self.t_first is None:
            self.t_first = arrived
        self.t_last = arrived
        self.seqs.extend(int(s) for s, _ in found)
        if self.timed:
            self.kinds.extend(k.decode() for _, k in found)
            self.arrivals.extend([(arrived, first_read)] * len(found))
        self.last_kind = found[-1][1]
        self.last_frame = block[block.rfind(b"id: "):]

    def timed_frames(self) -> list[tuple[int, str, float, bool]]:
        """(seq, kind, arrival time, arrived in the first read) for every frame (`timed`)."""
        return [(s, k, t, first) for s, k, (t, first) in zip(self.seqs, self.kinds,
                                                             self.arrivals, strict=True)]

    @property
    def ended_terminal(self) -> bool:
        return self.last_kind == b"run.status" and any(
            s in self.last_frame for s in TERMINAL_MARKERS)


class SseReader(asyncio.Protocol):
    """One HTTP/1.1 GET of a run's SSE stream; records every frame's id as it arrives."""

    def __init__(self, request: bytes, timed: bool = False) -> None:
        self.request = request
        self.transport: asyncio.Transport | None = None
        self.response = Response()
        self.frames = SseFrames(timed)
        self.error: str | None = None
        loop = asyncio.get_running_loop()
        self.headed: asyncio.Future[None] = loop.create_future()  # the answer's head arrived
        self.closed: asyncio.Future[None] = loop.create_future()

    @property
    def status(self) -> int | None:
        return self.response.status

    @property
    def seqs(self) -> list[int]:
        return self.frames.seqs

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        transport.write(self.request)

    def data_received(self, data: bytes) -> None:
        arrived = time.perf_counter()
        if self.response.feed(data):
            if self.status != 200:
                self.error = f"status {self.status}: {self.response.first_body_bytes[:200]!r}"
            if not self.headed.done():
                self.headed.set_result(None)
        if not self.response.head_done:
            return
        self.frames.scan(self.response.body, arrived)
        if self.response.complete and self.transport is not None:
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        for future in (self.closed, self.headed):
            if not future.done():
                future.set_result(None)

    def close(self) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.close()


def sse_request(run_id: str, host: str, headers: dict[str, str] | None = None,
                after: int | None = None) -> bytes:
    query = f"?after={after}" if after is not None else ""
    extra = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
    return (f"GET {API_PREFIX}/runs/{run_id}/events{query} HTTP/1.1\r\nHost: {host}\r\n"
            f"Accept: text/event-stream\r\n{extra}Connection: close\r\n\r\n").encode()


@dataclass(frozen=True)
class SseTarget:
    """Where an SSE client connects: the front (TCP port) or the daemon socket (Unix path)."""

    kind: str  # "tcp" or "unix"
    where: int | str
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def host_header(self) -> str:
        return f"127.0.0.1:{self.where}" if self.kind == "tcp" else "daemon"


async def open_sse(target: SseTarget, run_id: str, after: int | None = None,
                   timed: bool = False) -> SseReader:
    loop = asyncio.get_running_loop()
    proto = SseReader(sse_request(run_id, target.host_header, target.headers, after), timed)
    if target.kind == "tcp":
        await loop.create_connection(lambda: proto, "127.0.0.1", int(target.where))
    else:
        await loop.create_unix_connection(lambda: proto, str(target.where))
    return proto


def read_sse_answer(raw: bytes) -> tuple[Response, SseFrames]:
    """Decode a whole SSE answer collected elsewhere (head included): (answer, its frames)."""
    response = Response()
    response.feed(raw)
    frames = SseFrames()
    frames.scan(response.body, time.perf_counter())
    return response, frames


def check_ids(name: str, got: list[int], want: list[int]) -> None:
    """Every id once, in order, nothing missing, nothing extra: raise (loudly) otherwise."""
    if got == want:
        return
    dup = len(got) - len(set(got))
    missing = sorted(set(want) - set(got))
    extra = sorted(set(got) - set(want))
    unordered = sum(1 for a, b in itertools.pairwise(got) if b <= a)
    raise RuntimeError(f"{name}: got {len(got)} ids, want {len(want)}: {len(missing)} missing "
                       f"(first {missing[:5]}), {len(extra)} unexpected (first {extra[:5]}), "
                       f"{dup} duplicated, {unordered} out of order")
