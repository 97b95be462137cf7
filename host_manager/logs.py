"""Host log lines: a bounded in-memory ring (served by offset) plus an append-only file.

The ring is bounded twice: by lines and by the bytes of their text (`max_bytes`, the
`host_log_bytes` limit), so 600 lines of 1 MB keep 8 MiB, not 600 MB.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

MAX_FILE_BYTES = 5 * 1024 * 1024


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

    def __init__(self, path: Path, capacity: int = 5000, max_bytes: int = 8 * 1024 * 1024) -> None:
        self._path = path
        self._capacity = capacity
        self._max_bytes = max_bytes
        self._bytes = 0  # of the text of the lines in the ring
        self._lines: deque[LogLine] = deque()
        self._next = 0
        self._file: IO[str] | None = None
        self._changed: asyncio.Event | None = None

    @property
    def next_offset(self) -> int:
        """The offset the next line will get (offsets start at 0 with each daemon)."""
        return self._next

    def append(self, generation: int, stream: str, text: str) -> None:
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
        try:
            if self._file is None:
                fd = os.open(self._path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
                self._file = os.fdopen(fd, "a", encoding="utf-8")
            self._file.write(f"{line.time:.3f} g{line.generation} {line.stream} {line.text}\n")
            self._file.flush()
            if self._file.tell() > MAX_FILE_BYTES:
                self._rotate()
        except OSError:
            pass  # the file is a convenience; the ring still has the lines

    def _rotate(self) -> None:
        assert self._file is not None
        self._file.close()
        self._file = None
        self._path.replace(self._path.with_suffix(".log.1"))

    def tail(self, count: int, generation: int | None = None) -> list[str]:
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
        if self._file is not None:
            self._file.close()
            self._file = None
