"""One batch of queued writes as one transaction, on the writer thread.

Event appends and write ops commit in the order they were queued; each op (with the events
it brings) runs in its own savepoint, so its own failure rolls back only its part. The seq
counter lives here, so ops and appends draw from it in commit order, and it goes back with
whatever rolls back. Which failures are the storage's (the whole batch is retried later)
and which an op's own is decided here too.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

from llamon_playground.daemon.store.frames import INSERT_EVENTS, build_frame
from llamon_playground.daemon.store.records import EventRow

log = logging.getLogger(__name__)

WriteOp = Callable[[sqlite3.Connection], Any]

# SQLite's primary result codes for a full, failing, locked or read-only disk.
STORAGE_FAULT_CODES = frozenset({5, 6, 8, 10, 13, 14})


def is_storage_fault(exc: BaseException) -> bool:
    """Whether an op failed because of the storage (retry later), not because of itself."""
    if isinstance(exc, OSError):
        return True
    code = getattr(exc, "sqlite_errorcode", None)
    return isinstance(exc, sqlite3.OperationalError) and code is not None \
        and code & 0xFF in STORAGE_FAULT_CODES


@dataclass(slots=True)
class PendingOp:
    """A write op waiting for the writer, with the events that commit with it and whoever waits
    for its result."""

    op: WriteOp
    future: asyncio.Future[Any] | None  # None: submitted, nobody waits (failures are logged)
    # Events that commit in the op's own savepoint: both land or neither does.
    events: list[tuple[str, str, bytes]] = field(default_factory=list)
    # Kept and retried while history is degraded (as events are), never failed for it.
    durable: bool = False
    # Called on the loop right after the commit, before any waiter or subscriber hears of it.
    then: Callable[[], None] | None = None

    @property
    def retried(self) -> bool:
        return self.future is None or self.durable


# An event waiting for the writer: (run_id, kind, payload).
Item = tuple[str, str, bytes] | PendingOp
OpResult = tuple[PendingOp, Any, Exception | None]  # the op, its value, its own failure


def noop(conn: sqlite3.Connection) -> None:
    """A write that does nothing: awaiting it waits for everything queued before it."""


def kept_for_retry(batch: list[Item], error: Exception) -> list[Item]:
    """A batch that did not commit: what stays queued for the retry, in its order (events,
    row updates nobody waits for, durable writes); every other waiter hears `error`."""
    for item in batch:
        if isinstance(item, PendingOp) and not item.retried \
                and item.future is not None and not item.future.done():
            item.future.set_exception(error)
    return [item for item in batch if not isinstance(item, PendingOp) or item.retried]


def settle(results: list[OpResult]) -> None:
    """After a commit, on the loop: each op's waiter hears its value or its own failure (an
    op nobody waits for that failed is logged)."""
    for done, value, problem in results:
        if done.future is None:
            if problem is not None:
                log.error("a queued history write failed: %s", problem)
        elif not done.future.done():
            if problem is not None:
                done.future.set_exception(problem)
            else:
                done.future.set_result(value)


class Batches:
    """The writer thread's side of the store: commits batches, numbers events."""

    def __init__(self) -> None:
        self.next_seq = 1
        self._cursor = 1
        # Items after the op running now in the same transaction: they wait for its commit
        # as much as queued writes do (a long op, a deletion step, asks `writes_waiting`).
        self.behind = 0

    def reserve_seqs(self, count: int) -> int:
        """The first of `count` event seqs, for a write op that inserts events itself.

        Only from inside a write op (on the writer thread): the seq counter belongs to the
        transaction in progress and goes back if it rolls back.
        """
        first = self._cursor
        self._cursor += count
        return first

    def commit(self, conn: sqlite3.Connection, batch: list[Item], ts: str
               ) -> tuple[list[EventRow], list[OpResult]]:
        """The whole transaction in one go: the committed event rows and each op's result."""
        rows: list[EventRow] = []
        results: list[OpResult] = []
        self._cursor = self.next_seq
        conn.execute("BEGIN IMMEDIATE")
        try:
            start, n = 0, len(batch)
            while start < n:
                item = batch[start]
                if type(item) is PendingOp:
                    self.behind = n - start - 1
                    conn.execute("SAVEPOINT op")
                    cursor = self._cursor
                    try:
                        value = item.op(conn)
                        own = self.insert_events(conn, item.events, ts)
                    except Exception as exc:  # the op's own failure rolls back only that op
                        conn.execute("ROLLBACK TO op")
                        conn.execute("RELEASE op")
                        self._cursor = cursor
                        if is_storage_fault(exc):
                            raise  # the disk, not the op: the whole batch is retried
                        results.append((item, None, exc))
                    else:
                        conn.execute("RELEASE op")
                        rows.extend(own)
                        results.append((item, value, None))
                    start += 1
                    continue
                end = start + 1
                while end < n and type(batch[end]) is not PendingOp:
                    end += 1
                first = self._cursor
                self._cursor += end - start
                # Each frame is built once, here: stored for replay, published for live.
                events = cast("list[tuple[str, str, bytes]]", batch[start:end])
                segment: list[EventRow] = [
                    (seq, run_id, kind, ts, build_frame(seq, run_id, kind, payload))
                    for seq, (run_id, kind, payload) in zip(range(first, self._cursor), events,
                                                            strict=True)]
                conn.executemany(INSERT_EVENTS, segment)
                rows.extend(segment)
                start = end
            conn.execute("COMMIT")
        except BaseException:
            self.behind = 0
            try:
                conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass
            raise
        self.next_seq = self._cursor
        self.behind = 0
        return rows, results

    def insert_events(self, conn: sqlite3.Connection, events: list[tuple[str, str, bytes]],
                      ts: str) -> list[EventRow]:
        """Insert events inside the transaction in progress, seqs in commit order."""
        if not events:
            return []
        first = self.reserve_seqs(len(events))
        rows: list[EventRow] = [
            (first + i, run_id, kind, ts, build_frame(first + i, run_id, kind, payload))
            for i, (run_id, kind, payload) in enumerate(events)]
        conn.executemany(INSERT_EVENTS, rows)
        return rows
