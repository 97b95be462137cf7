"""The compactor: moves finished runs' events into blocks, a little at a time.

A sweep walks the runs in insertion order from where it last stopped (kept in `upkeep`,
committed with the blocks it wrote, so a kill loses at most the step in progress and the
next start resumes there). Each step is one small write transaction (at most STEP_EVENTS
events), queued behind the writes waiting for the writer, so live runs and requests go on
meanwhile. The sweep stops at the first run that is not over (the active one) and goes on
once it ends. Runs that existed before this format (a migrated history) are converted by
the same sweep, in place. Each sweep first converts what is left of an earlier version's
zstandard blocks to deflate (recoding.py): on the first start after an upgrade, that is all of
them, a few per step.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from llamon_playground.daemon.errors import StoreError
from llamon_playground.daemon.store.database import Store
from llamon_playground.daemon.store.event_log import TERMINAL_VALUES, is_terminal
from llamon_playground.daemon.store.frames import (
    BLOCK_BYTES,
    BLOCK_EVENTS,
    INSERT_BLOCK,
    STATUS_SQL,
    TERMINAL_SQL,
    pack,
)
from llamon_playground.daemon.store.history import COMPACTED_MARK
from llamon_playground.daemon.store.records import EventRow
from llamon_playground.daemon.store.removal.space import give_back
from llamon_playground.daemon.store.upkeep.recoding import recode_step

log = logging.getLogger(__name__)

STEP_EVENTS = 4096  # events moved per transaction: ~10-30 ms of the writer's time
STEP_RUNS = 64
PAUSE = 0.005  # between steps: other writes get the writer first
IDLE_CHECK = 30.0  # a look for runs that ended without telling us (imports)
# A sweep waits for the writer to be quiet this long (at most SETTLE_MAX): a run that just
# ended is often followed at once by the next create, whose commit must not queue behind a
# compaction step (docs/storage.md, "History").
SETTLE = 0.25
SETTLE_MAX = 5.0
# Free pages past this (and a quarter of the file) are given back after a sweep.
GIVE_BACK_BYTES = 32 << 20
MARK = COMPACTED_MARK  # lowered when runs are deleted (history.runs_deleted)

END_SQL = (f"SELECT max(seq) FROM events WHERE run_id = ? AND kind = 'run.status' "
           f"AND {STATUS_SQL} IN {TERMINAL_SQL}")


@dataclass(frozen=True)
class Step:
    """What one compaction transaction did, and whether the sweep should go on at once."""

    events: int  # moved into blocks by this step
    more: bool  # whether the sweep has more to do now


def read_mark(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT value FROM upkeep WHERE key = ?", (MARK,)).fetchone()
    return int(row[0]) if row else 0


def _set_mark(conn: sqlite3.Connection, rowid: int, was: int) -> None:
    if rowid == was:
        return  # nothing moved: an idle look writes nothing
    conn.execute("INSERT INTO upkeep (key, value) VALUES (?, ?) "
                 "ON CONFLICT (key) DO UPDATE SET value = excluded.value", (MARK, rowid))


def compact_step(conn: sqlite3.Connection) -> Step:
    """One sweep step, inside the writer's transaction."""
    mark = start = read_mark(conn)
    moved = 0
    runs = conn.execute(
        "SELECT rowid, id, status FROM runs WHERE rowid > ? ORDER BY rowid LIMIT ?",
        (mark, STEP_RUNS)).fetchall()
    for rowid, run_id, status in runs:
        if status not in TERMINAL_VALUES:
            _set_mark(conn, mark, start)
            return Step(moved, False)  # the active run: the sweep waits for its end
        end = conn.execute(END_SQL, (run_id,)).fetchone()[0]
        if end is not None:
            done, finished = compact_run(conn, run_id, int(end), STEP_EVENTS - moved)
            moved += done
            if not finished:
                _set_mark(conn, mark, start)
                return Step(moved, True)
        mark = rowid
        if moved >= STEP_EVENTS:
            break
    else:
        _set_mark(conn, mark, start)
        return Step(moved, len(runs) == STEP_RUNS)
    _set_mark(conn, mark, start)
    return Step(moved, True)


def compact_run(conn: sqlite3.Connection, run_id: str, end: int, budget: int
                ) -> tuple[int, bool]:
    """Move up to `budget` of the run's events before seq `end` (its terminal status) into
    blocks, oldest first: (events moved, whether none is left before `end`)."""
    rows: list[EventRow] = [
        (int(r[0]), run_id, r[1], r[2], bytes(r[3])) for r in conn.execute(
            "SELECT seq, kind, ts, frame FROM events WHERE run_id = ? AND seq < ? "
            "ORDER BY seq LIMIT ?", (run_id, end, budget + 1))]
    finished = len(rows) <= budget
    del rows[budget:]
    if not rows:
        return 0, True
    block: list[EventRow] = []
    size = 0
    blocks = []
    for row in rows:
        block.append(row)
        size += len(row[4])
        if len(block) >= BLOCK_EVENTS or size >= BLOCK_BYTES:
            blocks.append(block)
            block, size = [], 0
    if block:
        blocks.append(block)
    conn.executemany(INSERT_BLOCK, [
        pack(b, any(is_terminal(r[2], r[4]) for r in b if r[2] == "run.status"))
        for b in blocks])
    conn.execute("DELETE FROM events WHERE run_id = ? AND seq >= ? AND seq <= ?",
                 (run_id, rows[0][0], rows[-1][0]))
    return len(rows), finished


class Compactor:
    """Owns the background sweep: woken when a run ends (and once at start, for a history
    written before this format), it steps until nothing is left."""

    def __init__(self, store: Store, state_dir: Path,
                 give_back_bytes: int = GIVE_BACK_BYTES) -> None:
        self._store = store
        self._state_dir = state_dir
        self._give_back_bytes = give_back_bytes
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.events_compacted = 0
        self.blocks_recoded = 0
        self.running = False

    def noticed(self, rows: list[EventRow]) -> None:
        """Called with each committed batch: a terminal run.status starts a sweep."""
        for row in rows:
            if row[2] == "run.status" and is_terminal(row[2], row[4]):
                self._wake.set()
                return

    def start(self) -> None:
        """Start compacting in the background, beginning with what an earlier daemon left."""
        self._wake.set()  # what a previous daemon (or version) left
        self._task = asyncio.create_task(self._loop(), name="compactor")

    async def close(self) -> None:
        """Stop compacting and wait for the task to end."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    async def _loop(self) -> None:
        while True:
            try:
                async with asyncio.timeout(IDLE_CHECK):
                    await self._wake.wait()
            except TimeoutError:
                pass
            self._wake.clear()
            if not self._store.is_open:
                continue
            await self._settle()
            if await self.sweep():
                await self.give_back()

    async def _settle(self) -> None:
        """Wait for SETTLE s without commits, or SETTLE_MAX s at most."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + SETTLE_MAX
        # quiet_for() is a clock reading: no event marks "quiet", so this polls the clock.
        while (wait := SETTLE - self._store.quiet_for()) > 0 and loop.time() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(min(wait, deadline - loop.time()))

    async def sweep(self) -> int:
        """Step until the sweep has nothing more to do now (or a write fails: later); the
        events it moved."""
        self.running = True
        moved = 0
        try:
            if not await self._recode():
                return moved
            while True:
                try:
                    step = await self._store.write(compact_step)
                except StoreError as exc:  # history degraded: the next wake-up retries
                    log.info("compaction put off: %s", exc)
                    return moved
                except Exception:
                    log.exception("compaction step failed (rolled back)")
                    return moved
                self.events_compacted += step.events
                moved += step.events
                if not step.more:
                    return moved
                await asyncio.sleep(PAUSE)
        finally:
            self.running = False

    async def _recode(self) -> bool:
        """Convert the zstandard blocks left, a step at a time; False when a write failed
        (the next wake-up goes on from what is left)."""
        while True:
            try:
                done = await self._store.write(recode_step)
            except StoreError as exc:
                log.info("converting zstandard blocks put off: %s", exc)
                return False
            except Exception:
                log.exception("converting zstandard blocks failed (step rolled back)")
                return False
            if not done:
                return True
            if not self.blocks_recoded:
                log.info("converting an earlier version's zstandard blocks to deflate")
            self.blocks_recoded += done
            await asyncio.sleep(PAUSE)

    async def give_back(self) -> None:
        """The pages the moved rows left, back to the filesystem when they are many.

        Free pages are reused by the next runs' rows, so a few are kept: a live run's rows
        fill them again before its compaction frees them. Only a large share (an import of
        many runs, compacted: a year's history kept 2 GB free in a 2.3 GB file) is given
        back, a short write at a time (removal/space.py)."""
        try:
            free, total = await self._store.write(_free_and_total)
            if free < self._give_back_bytes or free * 4 < total:
                return
            log.info("giving back %d free bytes of %d after compaction", free, total)
            await give_back(self._store, self._state_dir)
        except StoreError as exc:
            log.info("giving space back put off: %s", exc)


def _free_and_total(conn: sqlite3.Connection) -> tuple[int, int]:
    """The file's free and total bytes."""
    page = int(conn.execute("PRAGMA page_size").fetchone()[0])
    free = int(conn.execute("PRAGMA freelist_count").fetchone()[0])
    return free * page, int(conn.execute("PRAGMA page_count").fetchone()[0]) * page
