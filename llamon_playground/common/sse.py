"""Reading a `text/event-stream`: the one SSE parser of the package (client, A2A, tests).

It follows the WHATWG HTML "event stream interpretation": lines end in CRLF, LF or a lone CR;
`:` lines are comments; a line without a colon is a field with an empty value; one space
after the colon is dropped; `data` lines of one event are joined with "\n"; a blank line
dispatches the event, and an event without any `data` line is dropped; `id` (unless it holds
NUL) sets the last event id, which stays until the next `id`; `retry` (ASCII digits only)
sets the reconnection time; a leading BOM is dropped; an event the stream ends in the middle
of (no blank line after it) is never dispatched.

The A2A client parses every token of a run through here, so the work is done per chunk and
per line with bytes methods written in C (`splitlines`, `partition`), never per byte.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable
from dataclasses import dataclass

BOM = b"\xef\xbb\xbf"
# A line's limit is on what it carries: its field name ("data: ") is not counted.
FIELD_NAME_ROOM = 16


class SseTooLarge(Exception):
    """A line or an event of the stream is longer than the parser was told to take."""

    def __init__(self, what: str, limit: int) -> None:
        super().__init__(f"{what} is longer than {limit} bytes")
        self.what = what
        self.limit = limit


@dataclass(frozen=True, slots=True)
class SseEvent:
    """One dispatched event.

    `event` is "message" when the block named none; `id` is the last event id in force when
    it was dispatched (None until the stream sets one); `retry` the reconnection time in ms
    in force (None until the stream sets one).
    """

    event: str
    data: str
    id: str | None = None
    retry: int | None = None


class SseParser:
    """Feed it the body's bytes in chunks cut anywhere; it returns the events they complete.

    With `max_line` / `max_event` (bytes), a longer line, or an event whose `data` lines
    join to more, sets `overflow` as soon as it is seen: at most about that much of it is
    ever held, the events completed before it are still returned, and the parser takes
    nothing more.
    """

    def __init__(self, max_line: int | None = None, max_event: int | None = None) -> None:
        self._max_line = max_line
        self._max_event = max_event
        self._pending: list[bytes] = []  # the start of a line not ended yet
        self._pending_bytes = 0
        self._data_bytes = 0
        self.overflow: SseTooLarge | None = None
        self._after_cr = False  # the last chunk ended in CR: a LF first in the next is its pair
        self._at_start = True  # a BOM may still be coming
        self._data: list[bytes] = []
        self._event = b""
        self._seen_data = False
        self.last_event_id: str | None = None
        self.retry: int | None = None

    def feed(self, chunk: bytes) -> list[SseEvent]:
        """The events `chunk` completes (a partial line waits for the next chunk); nothing more
        once a line overflowed."""
        if self.overflow is not None:
            return []
        if self._at_start:
            chunk = b"".join(self._pending) + chunk
            self._pending = []
            if len(chunk) < len(BOM) and BOM.startswith(chunk):
                self._pending = [chunk] if chunk else []
                return []  # too short to tell whether it is a BOM
            self._at_start = False
            chunk = chunk.removeprefix(BOM)
        if self._after_cr and chunk:
            self._after_cr = False
            if chunk[:1] == b"\n":
                chunk = chunk[1:]
        if b"\n" not in chunk and b"\r" not in chunk:
            if chunk:
                self._pending.append(chunk)  # no line ends here: keep it, join once it does
                self._pending_bytes += len(chunk)
                self._check_line(self._pending_bytes)
            return []
        if self._pending:
            self._pending.append(chunk)
            chunk = b"".join(self._pending)
            self._pending = []
            self._pending_bytes = 0
        lines = chunk.splitlines()
        last = chunk[-1:]
        if last == b"\r":
            self._after_cr = True
        elif last != b"\n":
            self._pending.append(lines.pop())  # the unfinished tail
            self._pending_bytes = len(self._pending[0])
        events = self._lines(lines)
        self._check_line(self._pending_bytes)
        return events

    def _check_line(self, size: int) -> bool:
        """Is a line of `size` bytes over the limit? (Then the parser stops, saying why.)"""
        if self._max_line is not None and size > self._max_line + FIELD_NAME_ROOM:
            self.overflow = self.overflow or SseTooLarge("a line of the event stream",
                                                         self._max_line)
            self._pending = []
            return True
        return False

    def _lines(self, lines: Iterable[bytes]) -> list[SseEvent]:
        events: list[SseEvent] = []
        for line in lines:
            if self._check_line(len(line)):
                break
            if not line:
                if self._seen_data:
                    events.append(SseEvent(
                        self._event.decode("utf-8", "replace") or "message",
                        b"\n".join(self._data).decode("utf-8", "replace"),
                        self.last_event_id, self.retry))
                self._data = []
                self._data_bytes = 0
                self._event = b""
                self._seen_data = False
                continue
            if line[:1] == b":":
                continue
            name, _, value = line.partition(b":")
            if value[:1] == b" ":
                value = value[1:]
            if name == b"data":
                self._data.append(value)
                self._seen_data = True
                self._data_bytes += len(value) + 1
                if self._max_event is not None and self._data_bytes > self._max_event + 1:
                    self.overflow = SseTooLarge("an event of the event stream",
                                                self._max_event)
                    self._data = []
                    break
            elif name == b"event":
                self._event = value
            elif name == b"id":
                if b"\0" not in value:
                    self.last_event_id = value.decode("utf-8", "replace")
            elif name == b"retry" and value.isdigit():
                self.retry = int(value)
        return events


async def aiter_sse(chunks: AsyncIterable[bytes]) -> AsyncIterator[SseEvent]:
    """The events of a body read chunk by chunk (e.g. aiohttp's `resp.content.iter_any()`)."""
    parser = SseParser()
    async for chunk in chunks:
        for event in parser.feed(chunk):
            yield event
