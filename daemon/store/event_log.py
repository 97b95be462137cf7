"""Live fan-out of committed events: one shared, bounded log per live run, and the
project-wide stream.

A run's subscribers keep their own cursor into its log and, when woken, write everything
they are behind in one go (a queue per subscriber costs one write per event and does not
scale). A subscriber that falls behind the log's floor is caught up from SQLite, never
dropped.

The project-wide stream (`ProjectEvents`: Host state changes and run status changes, live)
is low volume, so each of its subscribers has its own bounded queue; one that overflows is
closed (it reconnects and gets a fresh snapshot) rather than growing without bound.
"""

from __future__ import annotations

import asyncio
import bisect
from dataclasses import dataclass
from typing import Any

import orjson

from llamon_playground.common.contract import TERMINAL_STATUSES
from llamon_playground.daemon.store.frames import STATUS_KINDS, frame_data
from llamon_playground.daemon.store.records import EventRecord, EventRow

TERMINAL_VALUES = frozenset(s.value for s in TERMINAL_STATUSES)


@dataclass(frozen=True, slots=True)
class Frame:
    """One committed event as subscribers write it: its seq, its SSE bytes, and whether it ends
    the run."""

    seq: int
    data: bytes  # the full SSE frame
    terminal: bool


def is_terminal(kind: str, frame: bytes) -> bool:
    """Whether this is the status event that ends its run or suite run (read from the
    frame's data)."""
    return kind in STATUS_KINDS and \
        orjson.loads(frame_data(frame)).get("status") in TERMINAL_VALUES


def frame(record: EventRecord) -> Frame:
    return Frame(record.seq, record.frame, is_terminal(record.kind, record.frame))


def row_frame(row: EventRow) -> Frame:
    """A committed row's frame, as the writer built it (no second build)."""
    return Frame(row[0], row[4], is_terminal(row[2], row[4]))


class RunLog:
    """The committed events of one live run; `floor` marks what was trimmed away."""

    def __init__(self, run_id: str, capacity: int) -> None:
        self.run_id = run_id
        self.capacity = capacity
        self.floor = 0  # every event of this run with seq > floor is in memory
        self.closed = False
        self._seqs: list[int] = []
        self._frames: list[Frame] = []
        self._changed: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    @property
    def last_seq(self) -> int:
        """The last seq held (the floor when none is)."""
        return self._seqs[-1] if self._seqs else self.floor

    def extend(self, frames: list[Frame]) -> None:
        """Append committed frames (a terminal one closes the log), keep at most twice the
        capacity, wake readers."""
        for f in frames:
            self._seqs.append(f.seq)
            self._frames.append(f)
            if f.terminal:
                self.closed = True
        if len(self._frames) > 2 * self.capacity:
            cut = len(self._frames) - self.capacity
            self.floor = self._seqs[cut - 1]
            del self._seqs[:cut]
            del self._frames[:cut]
        self._wake()

    def close(self) -> None:
        """No more frames will come: wake readers so they finish."""
        self.closed = True
        self._wake()

    def _wake(self) -> None:
        # One future shared by every waiter: a wake-up costs one callback per subscriber,
        # not a task and a timer each (that is what 200 subscribers would pay otherwise).
        if not self._changed.done():
            self._changed.set_result(None)
        self._changed = asyncio.get_running_loop().create_future()

    def covers(self, cursor: int) -> bool:
        """Whether every frame after `cursor` is still held here."""
        return cursor >= self.floor

    def after(self, cursor: int) -> list[Frame]:
        """The held frames after `cursor`."""
        index = bisect.bisect_right(self._seqs, cursor)
        return self._frames[index:]

    async def wait_after(self, cursor: int, timeout: float) -> bool:
        """Wait until something past `cursor` exists or the log closes; False on timeout."""
        if self.last_seq > cursor or self.closed:
            return True
        try:
            async with asyncio.timeout(timeout):
                await asyncio.shield(self._changed)  # shield: a waiter leaving cancels nothing
        except TimeoutError:
            return False
        return True


class EventHub:
    """Routes committed events to the live run logs."""

    def __init__(self, capacity: int) -> None:
        self._capacity = capacity
        self._logs: dict[str, RunLog] = {}

    def open_log(self, run_id: str) -> RunLog:
        """The live log of a run, created on first use."""
        log = self._logs.get(run_id)
        if log is None:
            log = self._logs[run_id] = RunLog(run_id, self._capacity)
        return log

    def get(self, run_id: str) -> RunLog | None:
        """The live log of a run, or None when the run is not live."""
        return self._logs.get(run_id)

    def drop(self, run_id: str) -> None:
        """Forget a run's log and close it, waking its subscribers."""
        log = self._logs.pop(run_id, None)
        if log is not None:
            log.close()

    def publish(self, rows: list[EventRow]) -> None:
        """Called by the store's writer right after a commit; frames only what live runs need."""
        by_run: dict[str, list[Frame]] = {}
        logs = self._logs
        for row in rows:
            if row[1] in logs:
                by_run.setdefault(row[1], []).append(row_frame(row))
        for run_id, frames in by_run.items():
            log = self._logs[run_id]
            log.extend(frames)
            if log.closed:
                # Late subscribers read a finished run from SQLite; holders keep their ref.
                del self._logs[run_id]

    def close_all(self) -> None:
        """Close every live log (shutdown): no subscriber is left waiting."""
        for log in self._logs.values():
            log.close()
        self._logs.clear()


PROJECT_QUEUE_LIMIT = 1000  # a project-stream subscriber's own queue


def sse_frame(kind: str, data: dict[str, Any], seq: int | None = None) -> bytes:
    """One SSE frame: `kind`, `data` as JSON, and the id `seq` when given."""
    head = b"id: %d\n" % seq if seq is not None else b""
    return head + b"event: %s\ndata: %s\n\n" % (kind.encode(), orjson.dumps(data))


class ProjectEvents:
    """Fan-out of the project-wide stream; a subscriber that cannot keep up is cut off (it
    reconnects to a fresh snapshot) rather than slowing anyone else."""

    def __init__(self) -> None:
        self._subscribers: set[asyncio.Queue[bytes | None]] = set()

    def subscribe(self) -> asyncio.Queue[bytes | None]:
        """A queue of the project's event frames; None in it means the stream ends."""
        queue: asyncio.Queue[bytes | None] = asyncio.Queue(PROJECT_QUEUE_LIMIT)
        self._subscribers.add(queue)
        return queue

    def unsubscribe(self, queue: asyncio.Queue[bytes | None]) -> None:
        """Stop sending to `queue`."""
        self._subscribers.discard(queue)

    def _send(self, frame: bytes) -> None:
        for queue in list(self._subscribers):
            try:
                queue.put_nowait(frame)
            except asyncio.QueueFull:
                self._subscribers.discard(queue)
                queue.get_nowait()
                queue.put_nowait(None)  # tells the handler to end this stream

    def host_changed(self, status: dict[str, Any]) -> None:
        """Send the Host's new status to every subscriber."""
        self._send(sse_frame("host.state", status))

    def updated(self, kind: str, data: dict[str, Any]) -> None:
        """`run.updated` / `session.updated` (a label, note, title or metadata changed),
        `session.created` / `session.deleted`: sent after the change committed; live only,
        like host.state."""
        self._send(sse_frame(kind, data))

    def committed(self, rows: list[EventRow]) -> None:
        """Send the run status changes among committed `rows` to every subscriber."""
        if not self._subscribers:
            return
        for row in rows:
            if row[2] == "run.status":
                self._send(row[4])  # its stored frame is this stream's frame too

    def close_all(self) -> None:
        """End every subscriber's stream."""
        for queue in list(self._subscribers):
            try:
                queue.put_nowait(None)
            except asyncio.QueueFull:
                pass
        self._subscribers.clear()
