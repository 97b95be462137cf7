"""Host log lines: from the Host's bytes to lines, a bounded in-memory ring (served by
offset) and a size-rotated file.

On the way in (`HostOutput`), each stream's bytes have the generation's capture token masked
however the Host's writes split it (`Redactor` holds back at most the token's length less
one byte between writes), then are cut into lines of at most `MAX_LINE_BYTES` (the rest of a
longer line is dropped as it arrives): memory follows one line, never the Host's output.

The ring is bounded twice: by lines and by the bytes of their text (`max_bytes`, the
`host_log_bytes` limit), so 600 lines of 1 MB keep 8 MiB, not 600 MB. The file never
grows past `file_bytes`: a line that would take it over rotates it first (`host.log.1` ...
`host.log.<backups>`), and a line longer than a whole file is cut to fit.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

MAX_LINE_BYTES = 1024 * 1024  # a Host log line is cut there (docs/security.md, "Limits")
MAX_FILE_BYTES = 5 * 1024 * 1024  # host.log's default size (Settings.host_log_file_bytes)
TOKEN_MASK = "[REDACTED capture token]"


class Redactor:
    """Masks every occurrence of `secret` in a byte stream fed in pieces of any size."""

    def __init__(self, secret: str, mask: str = TOKEN_MASK) -> None:
        self._secret = secret.encode()
        self._mask = mask.encode()
        self._held = b""  # the end of the stream so far that may begin the secret

    def feed(self, data: bytes) -> bytes:
        """What of the stream can be passed on now, masked."""
        if not self._secret:
            return data
        buf = (self._held + data).replace(self._secret, self._mask)
        keep = 0
        for k in range(min(len(self._secret) - 1, len(buf)), 0, -1):
            if buf.endswith(self._secret[:k]):
                keep = k
                break
        self._held = buf[len(buf) - keep:] if keep else b""
        return buf[:len(buf) - keep]

    def close(self) -> bytes:
        """The end of the stream: what was held back is not the secret after all."""
        held, self._held = self._held, b""
        return held


class LineCutter:
    """Bytes in, lines out (without their newline): a line longer than `max_line` bytes is
    handed on at its first `max_line` bytes and the rest of it dropped as it arrives."""

    def __init__(self, emit: Callable[[bytes], None], max_line: int = MAX_LINE_BYTES) -> None:
        self._emit = emit
        self._max = max_line
        self._part = bytearray()
        self._dropping = False  # inside a line already cut

    def feed(self, data: bytes) -> None:
        start = 0
        while start < len(data):
            newline = data.find(b"\n", start)
            end = len(data) if newline < 0 else newline
            if not self._dropping:
                room = self._max - len(self._part)
                self._part += data[start:start + min(end - start, room)]
                if end - start > room:
                    self._flush()
                    self._dropping = True
            if newline < 0:
                return
            if not self._dropping:
                self._flush()
            self._dropping = False
            start = newline + 1

    def close(self) -> None:
        """The stream ended: a last line without its newline is still a line."""
        if self._part:
            self._flush()
        self._dropping = False

    def _flush(self) -> None:
        line = bytes(self._part)
        self._part.clear()
        self._emit(line)


class HostOutput:
    """One generation's output: `feed(stream, chunk)` per read (`b""` at the end of a
    stream), `on_line(stream, text)` per masked, cut line."""

    def __init__(self, token: str, on_line: Callable[[str, str], None],
                 max_line: int = MAX_LINE_BYTES) -> None:
        self._token = token
        self._on_line = on_line
        self._max_line = max_line
        self._streams: dict[str, tuple[Redactor, LineCutter]] = {}

    def feed(self, stream: str, data: bytes) -> None:
        redactor, cutter = self._pipeline(stream)
        if data:
            cutter.feed(redactor.feed(data))
        else:
            cutter.feed(redactor.close())
            cutter.close()

    def _pipeline(self, stream: str) -> tuple[Redactor, LineCutter]:
        if stream not in self._streams:
            def emit(line: bytes) -> None:
                self._on_line(stream, line.decode("utf-8", "replace"))
            self._streams[stream] = (Redactor(self._token), LineCutter(emit, self._max_line))
        return self._streams[stream]


@dataclass(frozen=True, slots=True)
class LogLine:
    """One line of Host output, numbered by its offset in this daemon's log."""

    offset: int
    time: float
    generation: int
    stream: str
    text: str

    def as_dict(self) -> dict[str, Any]:
        return {"offset": self.offset, "time": self.time, "generation": self.generation,
                "stream": self.stream, "text": self.text}


class HostLogs:
    """The Host's output: the last lines kept in memory for the API (served by offset, waited
    on by followers; bounded by lines and by bytes) and every line appended to the log file."""

    def __init__(self, path: Path, capacity: int = 5000, max_bytes: int = 8 * 1024 * 1024,
                 file_bytes: int = MAX_FILE_BYTES, file_backups: int = 1) -> None:
        self._path = path
        self._capacity = capacity
        self._max_bytes = max_bytes
        self._bytes = 0  # of the text of the lines in the ring
        self._lines: deque[LogLine] = deque()
        self._next = 0
        self._file: IO[bytes] | None = None
        self._file_size = 0
        self._file_bytes = max(file_bytes, 2)  # room for a newline and one byte of text
        self._file_backups = file_backups
        self._changed: asyncio.Event | None = None

    @property
    def next_offset(self) -> int:
        """The offset the next line will get (offsets start at 0 with each daemon)."""
        return self._next

    def append(self, generation: int, stream: str, text: str) -> None:
        """One line of the Host's output: kept in memory, written to host.log (rotated)."""
        line = LogLine(self._next, time.time(), generation, stream, text)
        self._next += 1
        self._lines.append(line)
        self._bytes += len(text)
        # The newest line always stays, even one over the budget alone (the reader bounds
        # a line's length): what is dropped is the oldest.
        while len(self._lines) > 1 and (len(self._lines) > self._capacity
                                        or self._bytes > self._max_bytes):
            self._bytes -= len(self._lines.popleft().text)
        self._write_file(line)
        if self._changed is not None:
            self._changed.set()
            self._changed = None

    async def wait_after(self, offset: int, timeout: float) -> bool:
        """Wait until a line with offset >= `offset` exists; False on timeout."""
        if self._next > offset:
            return True
        if self._changed is None:
            self._changed = asyncio.Event()
        try:
            await asyncio.wait_for(self._changed.wait(), timeout)
        except TimeoutError:
            return False
        return True

    def _write_file(self, line: LogLine) -> None:
        data = f"{line.time:.3f} g{line.generation} {line.stream} {line.text}".encode(
            "utf-8", "replace")[:self._file_bytes - 1] + b"\n"
        try:
            if self._file is not None and self._file_size + len(data) > self._file_bytes:
                self._rotate()
            if self._file is None:
                fd = os.open(self._path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW
                             | os.O_CLOEXEC, 0o600)
                self._file = os.fdopen(fd, "ab", buffering=0)
                self._file_size = os.fstat(fd).st_size
                if self._file_size and self._file_size + len(data) > self._file_bytes:
                    self._rotate()  # a previous daemon's file, already full
                    return self._write_file(line)
            self._file.write(data)
            self._file_size += len(data)
        except OSError:
            pass  # the file is a convenience; the ring still has the lines

    def _rotate(self) -> None:
        """host.log -> host.log.1 -> ... -> host.log.<backups>; the oldest goes."""
        if self._file is not None:
            self._file.close()
            self._file = None
        self._file_size = 0
        if self._file_backups < 1:
            self._path.unlink(missing_ok=True)
            return
        for n in range(self._file_backups - 1, 0, -1):
            older = self._path.with_name(f"{self._path.name}.{n}")
            if older.exists():
                older.replace(self._path.with_name(f"{self._path.name}.{n + 1}"))
        self._path.replace(self._path.with_name(f"{self._path.name}.1"))

    def tail(self, count: int, generation: int | None = None) -> list[str]:
        """The last `count` lines, of `generation` only when given."""
        lines = [ln for ln in self._lines if generation is None or ln.generation == generation]
        return [f"[{ln.stream}] {ln.text}" for ln in lines[-count:]]

    def window(self, since: int, generation: int | None, count: int) -> list[str]:
        """The last `count` lines at or after offset `since`, of `generation` when known:
        "the last lines of the log" would show an earlier run's traceback beside a later
        run's failure (same generation, or a Host replaced since)."""
        own = [ln for ln in self._lines if ln.offset >= since
               and (generation is None or ln.generation == generation)]
        return [f"[{ln.stream}] {ln.text}" for ln in own[-count:]]

    def after(self, offset: int, limit: int) -> tuple[list[LogLine], bool]:
        """Lines with offset >= `offset`; the flag says older lines were dropped."""
        first = self._lines[0].offset if self._lines else self._next
        overflow = offset < first
        return [ln for ln in self._lines if ln.offset >= offset][:limit], overflow

    def close(self) -> None:
        """Close host.log (the lines in memory stay readable)."""
        if self._file is not None:
            self._file.close()
            self._file = None
