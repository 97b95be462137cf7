"""SQLite history: one writer task with group commit, one reader connection.

Every write goes through the writer queue, so event appends and run updates commit in the
order they were made. Event appends are batched: all appends queued while the previous
transaction committed go into the next one (one fsync for many token deltas). Events are
published to subscribers only after their transaction committed, so a client never sees an
event that a crash could take back.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

import aiosqlite
import orjson

from .config import Settings
from .errors import StoreError, UnsupportedDatabaseVersion
from .migrations import MIGRATIONS, SCHEMA_VERSION

log = logging.getLogger(__name__)

T = TypeVar("T")
WriteOp = Callable[[aiosqlite.Connection], Awaitable[Any]]

MAX_BATCH = 4096
RETRY_MIN = 0.05
RETRY_MAX = 2.0


def utcnow() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True, slots=True)
class EventRecord:
    seq: int
    run_id: str
    kind: str
    payload: bytes  # a JSON object without seq/run_id/kind

    def data_json(self) -> bytes:
        """The SSE `data:` JSON: seq, run_id and kind first, then the payload's fields."""
        head = b'{"seq":%d,"run_id":"%s","kind":"%s"' % (
            self.seq, self.run_id.encode(), self.kind.encode())
        if self.payload == b"{}":
            return head + b"}"
        return head + b"," + self.payload[1:]

    def as_dict(self) -> dict[str, Any]:
        return orjson.loads(self.data_json())  # type: ignore[no-any-return]


@dataclass(slots=True)
class _PendingEvent:
    run_id: str
    kind: str
    payload: bytes


@dataclass(slots=True)
class _PendingOp:
    op: WriteOp
    future: asyncio.Future[Any]


class Store:
    """Opens lazily: nothing under .llamon/ exists until the Playground API is first used."""

    def __init__(self, settings: Settings,
                 on_commit: Callable[[list[EventRecord]], None] | None = None,
                 on_degraded: Callable[[StoreError], None] | None = None) -> None:
        self._settings = settings
        self._on_commit = on_commit or (lambda events: None)
        self._on_degraded = on_degraded or (lambda error: None)
        self.degraded = False
        self._writer: aiosqlite.Connection | None = None
        self._reader: aiosqlite.Connection | None = None
        self._queue: asyncio.Queue[_PendingEvent | _PendingOp] = asyncio.Queue()
        self._writer_task: asyncio.Task[None] | None = None
        self._open_lock = asyncio.Lock()
        self._next_seq = 1
        self.unsupported_version: int | None = None
        self.write_failures = 0
        self.batches_committed = 0

    @property
    def is_open(self) -> bool:
        return self._reader is not None

    async def open(self) -> None:
        if self._reader is not None:
            return
        async with self._open_lock:
            if self._reader is not None:
                return
            await self._open()

    async def _open(self) -> None:
        settings = self._settings
        settings.files_dir.mkdir(parents=True, exist_ok=True)
        db = str(settings.db_path)
        if settings.db_path.exists():
            version = _peek_user_version(db)
            if version > SCHEMA_VERSION:
                self.unsupported_version = version
                raise UnsupportedDatabaseVersion(
                    f"database schema version {version} is newer than this daemon knows "
                    f"({SCHEMA_VERSION}); it was left untouched")
        writer = await aiosqlite.connect(db, isolation_level=None)
        try:
            await writer.execute("PRAGMA journal_mode=WAL")
            # FULL: a committed event survives power loss too; group commit pays for it.
            await writer.execute("PRAGMA synchronous=FULL")
            await writer.execute("PRAGMA foreign_keys=ON")
            await writer.execute(f"PRAGMA busy_timeout={int(settings.db_busy_timeout_ms)}")
            await _migrate(writer)
            async with writer.execute("SELECT COALESCE(MAX(seq), 0) FROM events") as cur:
                row = await cur.fetchone()
            self._next_seq = int(row[0]) + 1 if row else 1
            reader = await aiosqlite.connect(db, isolation_level=None)
            await reader.execute("PRAGMA busy_timeout=5000")
            reader.row_factory = sqlite3.Row
        except BaseException:
            await writer.close()
            raise
        self._writer = writer
        self._reader = reader
        self._writer_task = asyncio.create_task(self._write_loop(), name="store-writer")

    async def close(self) -> None:
        """Commit what is queued, then stop the writer and close both connections."""
        if self._writer_task is not None:
            await self.flush()
            self._writer_task.cancel()
            try:
                await self._writer_task
            except asyncio.CancelledError:
                pass
            self._writer_task = None
        for conn in (self._reader, self._writer):
            if conn is not None:
                await conn.close()
        self._reader = self._writer = None

    # -- writes -----------------------------------------------------------------------------

    def append_event(self, run_id: str, kind: str, payload: dict[str, Any]) -> None:
        """Queue an event; it commits with the next batch and is published after the commit."""
        self._queue.put_nowait(_PendingEvent(run_id, kind, orjson.dumps(payload)))

    async def write(self, op: Callable[[aiosqlite.Connection], Awaitable[T]]) -> T:
        """Run `op` inside the writer's next transaction (after every write queued before it)."""
        if self._writer_task is None:
            raise StoreError("store is not open")
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._queue.put_nowait(_PendingOp(op, future))
        return await future

    async def flush(self) -> None:
        """Wait until everything queued so far is committed (or has failed)."""
        async def noop(conn: aiosqlite.Connection) -> None:
            return None
        try:
            await self.write(noop)
        except StoreError:
            pass

    async def _write_loop(self) -> None:
        assert self._writer is not None
        conn = self._writer
        retry: list[_PendingEvent] = []
        delay = RETRY_MIN
        while True:
            batch: list[_PendingEvent | _PendingOp] = list(retry)
            if not batch:
                batch.append(await self._queue.get())
            while len(batch) < MAX_BATCH and not self._queue.empty():
                batch.append(self._queue.get_nowait())
            retry = await self._commit_batch(conn, batch)
            if retry:
                # Degraded: keep the events (in order) and try again after a pause; new
                # writes queue up behind them.
                await asyncio.sleep(delay)
                delay = min(delay * 2, RETRY_MAX)
            else:
                delay = RETRY_MIN

    async def _commit_batch(self, conn: aiosqlite.Connection,
                            batch: list[_PendingEvent | _PendingOp]) -> list[_PendingEvent]:
        """Commit one batch; on a write failure return its events to be retried."""
        first_seq = self._next_seq
        committed: list[EventRecord] = []
        results: list[tuple[_PendingOp, Any, Exception | None]] = []
        rows: list[tuple[int, str, str, bytes, str]] = []
        now = utcnow()
        try:
            await conn.execute("BEGIN IMMEDIATE")
            for item in batch:
                if isinstance(item, _PendingEvent):
                    seq = self._next_seq
                    self._next_seq += 1
                    rows.append((seq, item.run_id, item.kind, item.payload, now))
                    committed.append(EventRecord(seq, item.run_id, item.kind, item.payload))
                    continue
                if rows:
                    await _insert_events(conn, rows)
                    rows = []
                await conn.execute("SAVEPOINT op")
                try:
                    value = await item.op(conn)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # the op's own failure rolls back only that op
                    await conn.execute("ROLLBACK TO op")
                    await conn.execute("RELEASE op")
                    results.append((item, None, exc))
                else:
                    await conn.execute("RELEASE op")
                    results.append((item, value, None))
            if rows:
                await _insert_events(conn, rows)
            await conn.execute("COMMIT")
            self.batches_committed += 1
        except asyncio.CancelledError:
            await _rollback(conn)
            self._next_seq = first_seq
            for item in batch:
                if isinstance(item, _PendingOp) and not item.future.done():
                    item.future.set_exception(StoreError("store closed"))
            raise
        except (sqlite3.Error, OSError) as exc:
            await _rollback(conn)
            self._next_seq = first_seq
            self.write_failures += 1
            error = StoreError(f"history write failed: {exc}")
            if not self.degraded:
                log.warning("history degraded: %s", exc)
                self.degraded = True
                self._on_degraded(error)
            for item in batch:
                if isinstance(item, _PendingOp) and not item.future.done():
                    item.future.set_exception(error)
            return [item for item in batch if isinstance(item, _PendingEvent)]
        if self.degraded:
            log.warning("history writes work again")
            self.degraded = False
        for done, value, problem in results:
            if done.future.done():
                continue
            if problem is not None:
                done.future.set_exception(problem)
            else:
                done.future.set_result(value)
        if committed:
            self._on_commit(committed)
        return []

    # -- reads ------------------------------------------------------------------------------

    @property
    def reader(self) -> aiosqlite.Connection:
        if self._reader is None:
            raise StoreError("store is not open")
        return self._reader

    async def fetch_all(self, sql: str, params: Iterable[Any] = ()) -> list[sqlite3.Row]:
        rows = await self.reader.execute_fetchall(sql, tuple(params))
        return list(rows)

    async def fetch_one(self, sql: str, params: Iterable[Any] = ()) -> sqlite3.Row | None:
        rows = await self.fetch_all(sql, params)
        return rows[0] if rows else None

    async def events_after(self, run_id: str, after: int, limit: int = 2000) -> list[EventRecord]:
        rows = await self.reader.execute_fetchall(
            "SELECT seq, kind, payload FROM events WHERE run_id = ? AND seq > ? "
            "ORDER BY seq LIMIT ?", (run_id, after, limit))
        return [EventRecord(r[0], run_id, r[1], bytes(r[2])) for r in rows]


async def _insert_events(conn: aiosqlite.Connection,
                         rows: list[tuple[int, str, str, bytes, str]]) -> None:
    await conn.executemany(
        "INSERT INTO events (seq, run_id, kind, payload, ts) VALUES (?, ?, ?, ?, ?)", rows)


async def _rollback(conn: aiosqlite.Connection) -> None:
    try:
        await conn.execute("ROLLBACK")
    except sqlite3.Error:
        pass


def _peek_user_version(path: str) -> int:
    """Read user_version without writing anything (read-only, no journal changes)."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return int(conn.execute("PRAGMA user_version").fetchone()[0])
    finally:
        conn.close()


async def _migrate(conn: aiosqlite.Connection) -> None:
    async with conn.execute("PRAGMA user_version") as cur:
        row = await cur.fetchone()
    version = int(row[0]) if row else 0
    if version > SCHEMA_VERSION:
        raise UnsupportedDatabaseVersion(f"database schema version {version} is too new")
    for target in range(version, SCHEMA_VERSION):
        await conn.execute("BEGIN IMMEDIATE")
        try:
            for statement in _split_sql(MIGRATIONS[target]):
                await conn.execute(statement)
            await conn.execute(f"PRAGMA user_version = {target + 1}")
            await conn.execute("COMMIT")
        except BaseException:
            await _rollback(conn)
            raise


def _split_sql(script: str) -> list[str]:
    """executescript() would COMMIT our transaction; run each statement ourselves instead."""
    statements: list[str] = []
    buf = ""
    for line in script.splitlines(keepends=True):
        if line.strip().startswith("--"):
            continue
        buf += line
        if sqlite3.complete_statement(buf):
            statements.append(buf.strip())
            buf = ""
    if buf.strip():
        statements.append(buf.strip())
    return statements
