"""SQLite history: one writer thread with group commit, one reader connection.

Every write goes through the writer's queue, so event appends and run updates commit in
the order they were made. All that was queued while the previous transaction committed goes
into the next one, in one hop to the writer thread (BEGIN, inserts and ops, COMMIT): a
stream of token deltas costs one fsync per batch, not one per token. Events are published
to subscribers only after their transaction committed, so a client never sees an event that
a crash could take back. Write ops are plain functions of a sqlite3 connection that run on
the writer thread; reads use their own (aiosqlite) connection, which WAL never blocks.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Callable
from typing import Any, TypeVar

import aiosqlite

from llamon_playground.common.config import Settings
from llamon_playground.common.heap import give_back_memory
from llamon_playground.daemon.errors import StoreError, UnsupportedDatabaseVersion
from llamon_playground.daemon.store.batch import (
    Batches,
    Item,
    OpResult,
    PendingOp,
    WriteOp,
    kept_for_retry,
    noop,
    settle,
)
from llamon_playground.daemon.store.migrations import SCHEMA_VERSION, peek_user_version
from llamon_playground.daemon.store.private import prepare_state, refuse_links
from llamon_playground.daemon.store.reads import StoreReads
from llamon_playground.daemon.store.records import EventRow, compact_json, utcnow
from llamon_playground.daemon.store.wal import (
    SpaceReserve,
    WalKeeper,
    WriterThread,
    open_writer,
    shrink_memory,
    truncate_wal,
    woken,
)

log = logging.getLogger(__name__)

T = TypeVar("T")

MAX_BATCH = 50_000  # bounds one transaction's latency under a flood
RETRY_MIN = 0.05
RETRY_MAX = 2.0
# The WAL stays small (wal.py): the keeper checkpoints beside the writer as it grows, the
# writer after IDLE_CHECKPOINT s without writes, truncating it. Nothing checkpoints per run.
# Then too, the writer's and the reader's page caches are emptied and the memory given back:
# filled by a day's runs and pages they would hold 2 MB each (SQLite's default) for as long
# as the daemon idles; refilled from the OS's cache of the file, a page costs microseconds.
IDLE_CHECKPOINT = 1.0
# A stream of events commits at most once per COMMIT_INTERVAL: a Host streaming faster than
# one commit's round trip would otherwise get a transaction, an fsync and two thread
# hand-offs per token (measured: ~250 us of daemon CPU a delta). The first event after a
# quiet spell, and any write someone waits for, still commit at once.
COMMIT_INTERVAL = 0.01
# A write queued `lazy` (a run's phases, status moves and row updates: how a run goes, not
# what it answers) waits up to LAZY_LINGER for company instead of committing on its own after
# a quiet spell: a run's first output then commits with everything queued before it in one
# fsync, instead of waiting behind the fsync of its phases. Nothing is published before its
# commit either way, so a client still sees only what a SIGKILL cannot take back.
LAZY_LINGER = 0.05


class Store(StoreReads):
    """Opens lazily: nothing under .llamon/ exists until the Playground API is first used."""

    def __init__(self, settings: Settings,
                 on_commit: Callable[[list[EventRow]], None] | None = None,
                 on_degraded: Callable[[StoreError], None] | None = None) -> None:
        self._settings = settings
        self._on_commit = on_commit or (lambda rows: None)
        self._on_degraded = on_degraded or (lambda error: None)
        self.degraded = False
        self._conn: sqlite3.Connection | None = None  # the writer's; used on its thread only
        self._thread: WriterThread | None = None
        self._reader: aiosqlite.Connection | None = None
        self._items: list[Item] = []
        self._wake = asyncio.Event()
        self._urgent = asyncio.Event()  # a queued write has a waiter: commit without lingering
        self._eager = False  # something queued is not `lazy`: the quiet-spell rule holds
        self._writer_task: asyncio.Task[None] | None = None
        self._open_lock = asyncio.Lock()
        # Owned by the writer thread once open: a write op that inserts events itself uses
        # it there (they are not published: boot recovery has no subscribers).
        self.batches = Batches()
        self.unsupported_version: int | None = None
        self.write_failures = 0
        self.batches_committed = 0
        self._wal_dirty = self._checkpoint_now = False  # written since one; one asked for
        self._keeper: WalKeeper | None = None
        self._last_commit = -COMMIT_INTERVAL  # loop time the latest batch began committing
        self._reserve = SpaceReserve(settings.state_dir / "history.reserve")
        self._spent_reserve = False  # given back by the latest failed commit: retry at once

    @property
    def wal(self) -> WalKeeper | None:
        """The WAL's keeper (it checkpoints beside the writer); None until open."""
        return self._keeper

    def quiet_for(self) -> float:
        """Seconds since the writer last began a commit (upkeep waits for a quiet spell)."""
        return asyncio.get_running_loop().time() - self._last_commit

    async def room_for_a_run(self) -> bool:
        """Whether the disk holds the reserve a run's ending may need (wal.py), taken again
        here if an ending spent it and it fits now: a run starts only then."""
        return self._reserve.held or await asyncio.to_thread(self._reserve.take)

    @property
    def is_open(self) -> bool:
        """Whether `open` has finished (the reader connection exists)."""
        return self._reader is not None

    async def open(self) -> None:
        """Open the database and start the writer; safe to call again, even concurrently."""
        if self._reader is not None:
            return
        async with self._open_lock:
            if self._reader is not None:
                return
            await self._open()

    async def _open(self) -> None:
        settings = self._settings
        db = str(settings.db_path)
        refuse_links(settings)  # not even peeked at through a link
        if settings.db_path.exists():
            version = peek_user_version(db)
            if version > SCHEMA_VERSION:
                self.unsupported_version = version
                raise UnsupportedDatabaseVersion(
                    f"database schema version {version} is newer than this daemon knows "
                    f"({SCHEMA_VERSION}); it was left untouched")
        prepare_state(settings)  # 0700 / 0600 whatever the umask
        self._thread = WriterThread("store-writer")
        try:
            self.batches.next_seq = await self._on_writer(self._open_writer, db)
            self._keeper = WalKeeper(db, int(settings.db_busy_timeout_ms))
            await asyncio.to_thread(self._keeper.open)
            await asyncio.to_thread(self._reserve.take)
            reader = await aiosqlite.connect(db, isolation_level=None)
            await reader.execute("PRAGMA busy_timeout=5000")
            reader.row_factory = sqlite3.Row
        except BaseException:
            await self._close_writer()
            raise
        self._reader = reader
        self._writer_task = asyncio.create_task(self._write_loop(), name="store-writer")

    def _open_writer(self, db: str) -> int:
        self._conn, next_seq = open_writer(db, int(self._settings.db_busy_timeout_ms))
        return next_seq

    async def _on_writer(self, fn: Callable[..., T], *args: Any) -> T:
        assert self._thread is not None
        return await self._thread.call(fn, *args)

    async def close(self) -> None:
        """Commit what is queued, then stop the writer and close both connections."""
        if self._writer_task is not None:
            await self.flush()
            self._writer_task.cancel()
            await asyncio.gather(self._writer_task, return_exceptions=True)
            self._writer_task = None
        if self._reader is not None:
            await self._reader.close()
            self._reader = None
        await self._close_writer()

    async def _close_writer(self) -> None:
        if self._keeper is not None:
            await asyncio.to_thread(self._keeper.close)
            self._keeper = None
        if self._thread is None:
            return
        if self._conn is not None:
            # Queued behind any commit still running on the thread, never beside it.
            await self._on_writer(self._conn.close)
            self._conn = None
        await self._thread.close()
        self._thread = None

    # -- writes -----------------------------------------------------------------------------

    def append_event(self, run_id: str, kind: str, payload: dict[str, Any], *,
                     urgent: bool = False, lazy: bool = False) -> None:
        """Queue an event; it commits with the next batch and is published after the commit.
        `urgent`: that batch commits without lingering (a run's first output, which someone
        watches for, must not wait out the commit interval the phases before it started);
        `lazy`: it waits up to LAZY_LINGER for a write that is not."""
        self._items.append((run_id, kind, compact_json(payload)))
        if urgent:
            self._urgent.set()
        self._eager = self._eager or not lazy
        self._wake.set()

    def submit(self, op: WriteOp, *, lazy: bool = False) -> None:
        """Queue a write nobody waits for (it still commits in order with everything else);
        `lazy` as for `append_event`."""
        self._items.append(PendingOp(op, None))
        self._eager = self._eager or not lazy
        self._wake.set()

    async def write(self, op: Callable[[sqlite3.Connection], T]) -> T:
        """Run `op(conn)` on the writer thread in the next transaction, after every write
        queued before it; its own exception rolls back only its part."""
        if self._writer_task is None:
            raise StoreError("store is not open")
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._items.append(PendingOp(op, future))
        self._urgent.set()
        self._wake.set()
        return await future

    async def write_with_events(self, op: Callable[[sqlite3.Connection], T],
                                events: list[tuple[str, str, dict[str, Any]]], *,
                                then: Callable[[], None] | None = None,
                                durable: bool = True) -> T:
        """`op` and `events` (run_id, kind, payload) in one savepoint of one transaction,
        retried in order while history is degraded until they commit (a run's ending must
        land whole, however long the disk is full). `then` runs on the loop right after
        the commit, before the events are published or this call returns. Not `durable`:
        a failed write fails the call, as `write` does (a run's creation)."""
        if self._writer_task is None:
            raise StoreError("store is not open")
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        encoded = [(run_id, kind, compact_json(payload)) for run_id, kind, payload in events]
        self._items.append(PendingOp(op, future, encoded, durable=durable, then=then))
        self._urgent.set()
        self._wake.set()
        return await future

    def marker(self) -> asyncio.Future[None]:
        """A future done once everything queued before it has committed and been published,
        or with the failure of its batch (already retrieved: a failed commit is the writer's
        to report). Queuing it asks for no commit of its own beyond the next batch."""
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        future.add_done_callback(lambda done: done.cancelled() or done.exception())
        self._items.append(PendingOp(noop, future))
        self._eager = True
        self._wake.set()
        return future

    async def flush(self) -> None:
        """Wait until everything queued so far is committed (or has failed)."""
        try:
            await self.write(noop)
        except StoreError:
            pass

    async def outside_transaction(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run `fn(conn)` on the writer thread between two transactions, after everything
        queued before it (a VACUUM cannot run inside one). The thread runs one thing at a
        time, so no batch commits beside it."""
        await self.flush()
        conn = self._conn
        if conn is None:
            raise StoreError("store is not open")
        return await self._on_writer(fn, conn)

    def writes_waiting(self) -> bool:
        """Whether writes wait: queued, or behind the op now running (a long op asks)."""
        return bool(self._items) or self.batches.behind > 0

    def checkpoint_soon(self) -> None:
        """Checkpoint as soon as the writer is idle (the trimmer freed pages)."""
        self._checkpoint_now = True
        self._wake.set()

    async def _wait_for_work(self) -> None:
        """Sleep until something is queued; checkpoint the WAL once the writer idles, and
        empty the page caches."""
        while not self._items:
            if self._checkpoint_now or (self._wal_dirty and not await woken(
                    self._wake, IDLE_CHECKPOINT)):
                await self._checkpoint()
                await self._shrink_caches()
                continue
            if self._items:
                return
            await self._wake.wait()
            self._wake.clear()

    async def _checkpoint(self) -> None:
        self._checkpoint_now = self._wal_dirty = False
        try:
            await self._on_writer(truncate_wal, self._conn)
        except (sqlite3.Error, OSError) as exc:  # a reader in the way, or the disk: later
            log.info("WAL checkpoint failed: %s", exc)

    async def _shrink_caches(self) -> None:
        try:
            await self._on_writer(shrink_memory, self._conn)
            if self._reader is not None:
                await self._reader.execute("PRAGMA shrink_memory")
        except (sqlite3.Error, ValueError) as exc:  # ValueError: the reader closed meanwhile
            log.info("emptying the page caches failed: %s", exc)
        give_back_memory()

    async def _write_loop(self) -> None:
        retry: list[Item] = []
        delay = RETRY_MIN
        loop = asyncio.get_running_loop()
        while True:
            if not retry:
                await self._wait_for_work()
                linger = self._last_commit + COMMIT_INTERVAL - loop.time()
                if linger > 0 and not self._urgent.is_set():
                    await woken(self._urgent, linger)
                await self._linger_if_lazy(loop.time() + LAZY_LINGER)
            self._last_commit = loop.time()
            self._wake.clear()
            self._urgent.clear()
            self._eager = False
            batch, self._items = retry + self._items[:MAX_BATCH], self._items[MAX_BATCH:]
            if self._items:  # a flood: the rest goes next, without lingering
                self._eager = True
                self._wake.set()
                self._urgent.set()
            retry = await self._commit(batch)
            self._wal_dirty = True
            if retry and self._spent_reserve:  # the reserve was just given back for it:
                self._spent_reserve = False  # the WAL copied back and truncated, then again
                await self._checkpoint()
                continue
            if retry:
                # Degraded: keep the events (in order) and try again after a pause; new
                # writes queue up behind them. A truncated WAL may be the space it needs.
                await self._checkpoint()
                await asyncio.sleep(delay)
                delay = min(delay * 2, RETRY_MAX)
            else:
                delay = RETRY_MIN

    async def _linger_if_lazy(self, until: float) -> None:
        """While only lazy writes are queued, wait (up to `until`) for another one."""
        loop = asyncio.get_running_loop()
        while not (self._eager or self._urgent.is_set()) and loop.time() < until:
            self._wake.clear()
            await woken(self._wake, until - loop.time())

    async def _commit(self, batch: list[Item]) -> list[Item]:
        """Commit one batch; on a write failure return its events, to be retried."""
        assert self._thread is not None
        try:
            # The waiters (a create's 202) hear of the commit in the same loop callback that
            # wakes this task: one wake-up from the thread per batch.
            await self._thread.call(self._commit_on_thread, batch, utcnow(),
                                    then=self._committed)
        except (sqlite3.Error, OSError) as exc:
            self.write_failures += 1
            error = StoreError(f"history write failed: {exc}")
            if any(isinstance(item, PendingOp) and item.durable for item in batch):
                # A run's ending waits (the only durable write): a full disk gives it room.
                self._spent_reserve = await asyncio.to_thread(self._reserve.give_back_for, exc)
            if not self.degraded:
                log.warning("history degraded: %s", exc)
                self.degraded = True
                self._on_degraded(error)
            return kept_for_retry(batch, error)
        return []

    def _committed(self, committed: tuple[list[EventRow], list[OpResult]]) -> None:
        """On the loop, right after a commit: the `then`s, the subscribers, the waiters."""
        rows, results = committed
        if self.degraded:
            log.warning("history writes work again")
            self.degraded = False
        self.batches_committed += 1
        for done, _, problem in results:
            if problem is None and done.then is not None:
                done.then()
        if rows:
            self._on_commit(rows)
        settle(results)

    def _commit_on_thread(self, batch: list[Item], ts: str
                          ) -> tuple[list[EventRow], list[OpResult]]:
        assert self._conn is not None
        done = self.batches.commit(self._conn, batch, ts)
        if self._keeper is not None:
            self._keeper.after_commit()
        return done

