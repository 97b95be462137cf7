"""History's write connection in WAL mode, the thread it is used on, and the keeper that
keeps its WAL small.

`WriterThread` is the connection's thread. `loop.run_in_executor` on a one-worker pool did
the same job at a cost a run's creation pays on its way to the 202: the pool's lock and
idle-thread bookkeeping on each submit, a concurrent Future wrapped in an asyncio one, and
a second `call_soon_threadsafe` (a second write to the loop's self-pipe, a second wake-up)
for the wrapper after the commit's own. Here a call is a tuple on a SimpleQueue, and its
end is one `call_soon_threadsafe` that runs the caller's `then` (the commit's waiters) and
settles the future in the same loop callback.

`open_writer` is how the one write connection is set up (its own function, so whoever
measures a write, scripts/bench's floor of a run's creation, opens exactly what the daemon
opens).

A checkpoint on the writer's thread (SQLite's automatic one runs inside the COMMIT that
crosses its threshold) makes whichever write comes next wait for it: a run created just
then answers late. So the writer only looks, after each commit, at how many WAL frames are
not yet copied back into the database, and once there are CHECKPOINT_FRAMES a PASSIVE
checkpoint runs on a connection and thread of the `WalKeeper`, beside the writer (WAL lets
a checkpoint and a writer run at once), as soon as the writer is quiet for a moment (the
disk is shared: see QUIET_WRITER). When everything is copied back, the writer's next
transaction starts the WAL over from its beginning, and `journal_size_limit` trims the
file. How many frames wait is read from the WAL-index (the `-shm` file: the header's
mxFrame and the checkpoint info's nBackfill, https://www.sqlite.org/walformat.html),
without SQLite's locks, so a value may be one commit stale: enough for a threshold. Where
the index is not as documented, the keeper checkpoints every FALLBACK_INTERVAL instead.

`SpaceReserve`: room kept on history's disk for a run's ending. A full disk must not leave
a run `running` for ever: its ending (its row and closing events, one transaction) has to
land. SQLite cannot make room by itself there (a checkpoint first copies the WAL back into
the database, which has to grow), so the store holds a file of RESERVE_BYTES beside the
database while it is open. When a write that carries a run's ending fails for want of
space, the file is given back, the WAL checkpointed and truncated, and the write retried at
once. A run is accepted only while the reserve is held: every accepted run can end, and
once an ending spent it, new runs answer `503 history_unavailable` until the space is back
(each asks for the reserve again).
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import queue
import sqlite3
import struct
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from llamon_playground.daemon.store.frames import refuse_unreadable_blocks
from llamon_playground.daemon.store.migrations import migrate

log = logging.getLogger(__name__)

# ~512 KiB of 4 KiB pages: well under SQLite's own threshold (WAL_AUTOCHECKPOINT_PAGES).
CHECKPOINT_FRAMES = 128
# A checkpoint's fsync beside a commit's makes the commit wait for the disk (measured here: a
# one-row commit during a 128-page checkpoint p50 0.73 ms, after it 0.34), and the write
# most likely to come is the next run's creation, right after the commit that ended a run.
# So a due checkpoint starts once the writer has been quiet for QUIET_WRITER seconds (in a
# streaming run: between two of its commits), at the latest after MAX_DEFER, or at once
# when the WAL holds URGENT_FRAMES (SQLite's own checkpoint, inside a commit, is worse).
QUIET_WRITER = 0.005
MAX_DEFER = 0.5
URGENT_FRAMES = 192
FALLBACK_INTERVAL = 0.5
WAL_INDEX_VERSION = 3007000
_U32 = struct.Struct("=I")  # the WAL-index is in the machine's own byte order
# SQLite checkpoints by itself at this many pages: the backstop, should the keeper fall
# behind. A reset WAL is trimmed back to WAL_SIZE_LIMIT, so a small disk is not eaten by
# frames copied back long ago.
WAL_AUTOCHECKPOINT_PAGES = 256
WAL_SIZE_LIMIT = 1 << 20
# A long run's ending (its output three times: the row, run.output, the search index) and
# the events kept in memory during the outage, with the WAL frames they take.
RESERVE_BYTES = 256 * 1024
SQLITE_FULL = 13
SPACE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})


def open_writer(db: str, busy_timeout_ms: int) -> tuple[sqlite3.Connection, int]:
    """The write connection, migrated, and the next event seq; used on one thread only."""
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        if int(conn.execute("PRAGMA page_count").fetchone()[0]) == 0:
            # A new file: free pages can go back to the filesystem (retention); only
            # settable before the first table (docs/storage.md, "Retention").
            conn.execute("PRAGMA auto_vacuum=INCREMENTAL")
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(f"PRAGMA wal_autocheckpoint={WAL_AUTOCHECKPOINT_PAGES}")
        conn.execute(f"PRAGMA journal_size_limit={WAL_SIZE_LIMIT}")
        # FULL: a committed event survives power loss too; group commit pays for it.
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute(f"PRAGMA busy_timeout={busy_timeout_ms}")
        migrate(conn)
        refuse_unreadable_blocks(conn)  # before anything is written or served
        next_seq = int(conn.execute("SELECT COALESCE(MAX(seq), 0) FROM events")
                       .fetchone()[0]) + 1
    except BaseException:
        conn.close()
        raise
    return conn, next_seq


def truncate_wal(conn: sqlite3.Connection) -> None:
    """The writer's own checkpoint once it idles: the WAL copied back and emptied."""
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def shrink_memory(conn: sqlite3.Connection) -> None:
    """Empty a connection's page cache, giving its memory back."""
    conn.execute("PRAGMA shrink_memory")

class WalKeeper:
    """The background checkpointer of one database; `after_commit` is called on the writer
    thread after each commit, everything else on the loop (open, close)."""

    def __init__(self, db: str, busy_timeout_ms: int) -> None:
        self._db = db
        self._busy_timeout_ms = busy_timeout_ms
        self._executor: ThreadPoolExecutor | None = None
        self._conn: sqlite3.Connection | None = None  # the keeper's; used on its thread only
        self._shm: int | None = None
        self._running = False  # a checkpoint is queued or running: never two at once
        self._closing = False
        self._last = 0.0
        self._last_commit = 0.0  # monotonic; written by the writer thread, read by the keeper's
        self.checkpoints = 0  # how many ran since open

    def open(self) -> None:
        """Start the thread and its connection (the database exists, in WAL mode)."""
        self._executor = ThreadPoolExecutor(1, thread_name_prefix="store-checkpoint")
        self._executor.submit(self._connect).result()

    def _connect(self) -> None:
        conn = sqlite3.connect(self._db, isolation_level=None)
        conn.execute(f"PRAGMA busy_timeout={self._busy_timeout_ms}")
        self._conn = conn

    def close(self) -> None:
        """Wait for a checkpoint in progress, then close the connection and the thread."""
        executor, self._executor = self._executor, None
        if executor is None:
            return
        self._closing = True  # a checkpoint waiting for a quiet writer runs now
        executor.submit(self._disconnect)
        executor.shutdown(wait=True)
        if self._shm is not None:
            os.close(self._shm)
            self._shm = None

    def _disconnect(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def after_commit(self) -> None:
        """On the writer thread, right after a commit: start a checkpoint if one is due."""
        self._last_commit = time.monotonic()
        if self._running or self._executor is None:
            return
        waiting = self.waiting_frames()
        if waiting is None:
            due = time.monotonic() - self._last >= FALLBACK_INTERVAL
        else:
            due = waiting >= CHECKPOINT_FRAMES
        if due:
            self._running = True
            self._last = time.monotonic()
            try:
                self._executor.submit(self._checkpoint)
            except RuntimeError:  # shutting down: the close checkpoints anyway
                self._running = False

    def waiting_frames(self) -> int | None:
        """WAL frames not yet copied back into the database; None when unknown (any
        thread: the writer's after each commit, a test's)."""
        try:
            if self._shm is None:
                self._shm = os.open(self._db + "-shm", os.O_RDONLY)
            head = os.pread(self._shm, 100, 0)
        except OSError:
            return None
        if len(head) < 100 or _U32.unpack_from(head, 0)[0] != WAL_INDEX_VERSION:
            return None
        frames: int = _U32.unpack_from(head, 16)[0]
        copied: int = _U32.unpack_from(head, 96)[0]
        return max(0, frames - copied)

    def _wait_for_quiet_writer(self) -> None:
        give_up = time.monotonic() + MAX_DEFER
        while not self._closing:
            now = time.monotonic()
            quiet = now - self._last_commit
            waiting = self.waiting_frames()
            if quiet >= QUIET_WRITER or now >= give_up or waiting is None \
                    or waiting >= URGENT_FRAMES:
                return
            time.sleep(min(QUIET_WRITER - quiet, give_up - now))  # on the keeper's own thread

    def _checkpoint(self) -> None:
        try:
            self._wait_for_quiet_writer()
            if self._conn is not None:
                self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                self.checkpoints += 1
        except (sqlite3.Error, OSError) as exc:  # a reader in the way, or the disk: later
            log.info("background WAL checkpoint failed: %s", exc)
        finally:
            self._running = False


T = TypeVar("T")

_Call = tuple[asyncio.AbstractEventLoop, "asyncio.Future[Any]", Callable[..., Any],
              tuple[Any, ...], Callable[[Any], None] | None]


class WriterThread:
    """One thread, one call at a time, in the order they were made; `close` waits for what
    was queued before it."""

    def __init__(self, name: str) -> None:
        self._calls: queue.SimpleQueue[_Call | None] = queue.SimpleQueue()
        # A daemon thread: an interpreter that exits without closing the store is not held
        # up by an idle writer (SQLite's own journal covers a commit cut short).
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()
        self._closed = False

    def call(self, fn: Callable[..., T], *args: Any,
             then: Callable[[T], None] | None = None) -> asyncio.Future[T]:
        """Run `fn(*args)` on the thread; `then(result)` runs on the loop just before the
        future is settled with it (not on an exception)."""
        if self._closed:
            raise RuntimeError("the writer thread is closed")
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._calls.put((loop, future, fn, args, then))
        return future

    async def close(self) -> None:
        """Stop after everything queued so far; returns once the thread has ended."""
        if self._closed:
            return
        self._closed = True
        self._calls.put(None)
        await asyncio.to_thread(self._thread.join)

    def _serve(self) -> None:
        while (item := self._calls.get()) is not None:
            loop, future, fn, args, then = item
            try:
                result = fn(*args)
            except BaseException as exc:  # noqa: BLE001 (handed to the caller, whatever it is)
                _tell(loop, _fail, future, exc)
            else:
                _tell(loop, _succeed, future, result, then)


async def woken(event: asyncio.Event, timeout: float | None) -> bool:
    """Wait up to `timeout` (None: as long as it takes) for `event`; whether it was set."""
    try:
        async with asyncio.timeout(timeout):
            await event.wait()
    except TimeoutError:
        return False
    return True


def _tell(loop: asyncio.AbstractEventLoop, callback: Callable[..., None], *args: Any) -> None:
    try:
        loop.call_soon_threadsafe(callback, *args)
    except RuntimeError:  # the loop is closed: nobody is waiting any more
        pass


def _succeed(future: asyncio.Future[T], result: T, then: Callable[[T], None] | None) -> None:
    try:
        if then is not None:
            then(result)
    finally:  # a `then` that fails is the loop's to report; the caller still goes on
        if not future.done():
            future.set_result(result)


def _fail(future: asyncio.Future[Any], exc: BaseException) -> None:
    if not future.done():
        future.set_exception(exc)




def out_of_space(exc: BaseException) -> bool:
    """Whether a write failed because the disk (or the quota) is full."""
    if isinstance(exc, OSError):
        return exc.errno in SPACE_ERRNOS
    code = getattr(exc, "sqlite_errorcode", None)
    return isinstance(exc, sqlite3.Error) and code is not None and code & 0xFF == SQLITE_FULL


class SpaceReserve:
    """The reserve file; `take` and `give_back` do blocking file work (call them off the
    loop)."""

    def __init__(self, path: Path, size: int = RESERVE_BYTES) -> None:
        self.path = path
        self.size = size
        self.held = False

    def take(self) -> bool:
        """Hold the reserve (its blocks allocated, not a sparse file); False when the disk
        has no room for it (nothing is left behind then)."""
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o600)
        except OSError as exc:
            log.warning("history's space reserve cannot be created: %s", exc)
            self.held = False
            return False
        try:
            try:
                os.posix_fallocate(fd, 0, self.size)
            except OSError as exc:
                if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL):
                    raise
                _write_zeros(fd, self.size)  # a filesystem without fallocate
            os.fsync(fd)
        except OSError as exc:
            os.close(fd)
            self.path.unlink(missing_ok=True)
            if self.held or exc.errno not in SPACE_ERRNOS:
                log.warning("history's space reserve cannot be kept: %s", exc)
            self.held = False
            return False
        os.close(fd)
        if not self.held:
            log.info("history's space reserve is held (%d KiB)", self.size // 1024)
        self.held = True
        return True

    def give_back_for(self, exc: BaseException) -> bool:
        """Free the reserve for a run's ending that failed with `exc`, if that was for want
        of space and the reserve is held; whether it was freed."""
        if not self.held or not out_of_space(exc):
            return False
        log.warning("history's disk is full: its %d KiB reserve is given back so a run's "
                    "ending can be written", self.size // 1024)
        self.path.unlink(missing_ok=True)
        self.held = False
        return True


def _write_zeros(fd: int, size: int) -> None:
    chunk = b"\0" * 65536
    written = os.lseek(fd, 0, os.SEEK_END)
    while written < size:
        written += os.write(fd, chunk[:size - written])
