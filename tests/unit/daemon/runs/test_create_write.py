"""A run's creation as the store sees it: one transaction, one commit, no read before it,
and no WAL checkpoint for a run, through a real RunManager on a real SQLite store.

The Host side is not under test here: the executor is a stand-in whose run ends when the
test says so (the e2e tests run the real one).
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from llamon_playground.common.config import build_settings
from llamon_playground.daemon.errors import Conflict, NotFound
from llamon_playground.daemon.runs.active import ActiveRun
from llamon_playground.daemon.runs.journal import RunJournal
from llamon_playground.daemon.runs.manager import RunManager
from llamon_playground.daemon.runs.state import RunStatus
from llamon_playground.daemon.store.blobs import BlobStore
from llamon_playground.daemon.store.database import Store
from llamon_playground.daemon.store.event_log import EventHub
from llamon_playground.daemon.store.history import create_session, get_run
from llamon_playground.daemon.store.upkeep.compaction import Compactor
from llamon_playground.daemon.store.wal import CHECKPOINT_FRAMES
from tests.support.waiting import eventually


class HeldExecutor:
    """Runs a run's task until `finish` (then the run ends as the Host had completed it)."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self._go: dict[str, asyncio.Event] = {}

    async def execute(self, run: ActiveRun) -> None:
        self.started.append(run.run_id)
        go = self._go.setdefault(run.run_id, asyncio.Event())
        await go.wait()
        run.advance(RunStatus.PREPARING)
        run.advance(RunStatus.RUNNING)
        await run.end()

    def finish(self, run_id: str) -> None:
        self._go.setdefault(run_id, asyncio.Event()).set()


@dataclass
class Traces:
    """Every SQL statement each connection ran, as SQLite's trace callback reports it."""

    writer: list[str] = field(default_factory=list)
    reader: list[str] = field(default_factory=list)

    def clear(self) -> None:
        self.writer.clear()
        self.reader.clear()


@dataclass
class Rig:
    store: Store
    runs: RunManager
    executor: HeldExecutor
    session_id: str
    traces: Traces
    compactor: Compactor
    db: Path


@pytest.fixture
async def rig(tmp_path: Path) -> AsyncIterator[Rig]:
    settings = build_settings(tmp_path, {"LLAMON_PLAYGROUND_RUNTIME_DIR": str(tmp_path / "rt")})
    compactor: list[Compactor] = []  # as the daemon wires it: told of every commit
    store = Store(settings, on_commit=lambda rows: [c.noticed(rows) for c in compactor])
    await store.open()
    compactor.append(Compactor(store, settings.db_path.parent))
    compactor[0].start()
    blobs = BlobStore(settings.files_dir)
    executor = HeldExecutor()
    runs = RunManager(tmp_path, store, blobs, EventHub(64), RunJournal(store, blobs),
                      executor)  # type: ignore[arg-type]
    traces = Traces()
    # The writer's connection is used on its own thread only: its trace is set there.
    await store.outside_transaction(lambda conn: conn.set_trace_callback(traces.writer.append))
    await store.reader.set_trace_callback(traces.reader.append)
    try:
        session = await create_session(store, "s", {})
        yield Rig(store, runs, executor, session["id"], traces, compactor[0],
                  settings.db_path)
    finally:
        await runs.shutdown()
        await compactor[0].close()
        await store.close()


BODY = {"parts": [{"kind": "text", "text": "hello"}]}


def waiting_frames(store: Store) -> int | None:
    assert store.wal is not None
    return store.wal.waiting_frames()


def checkpoints(store: Store) -> int:
    assert store.wal is not None
    return store.wal.checkpoints


def statements(trace: list[str], verb: str) -> list[str]:
    return [s for s in trace if s.strip().upper().startswith(verb)]


async def run_to_end(rig: Rig) -> str:
    accepted = await rig.runs.create(rig.session_id, BODY)
    run_id = accepted["run_id"]
    active = rig.runs.active
    assert active is not None and active.task is not None
    rig.executor.finish(run_id)
    await asyncio.wait_for(active.task, 10)  # its ending committed: the lock is free
    assert rig.runs.active is None
    return run_id


async def test_a_create_is_one_transaction_on_the_writer_and_reads_nothing(rig: Rig) -> None:
    await rig.store.flush()
    rig.traces.clear()
    commits_before = rig.store.batches_committed
    accepted = await rig.runs.create(rig.session_id, BODY)
    # Before anything else can reach the writer: exactly the create's own transaction.
    assert rig.store.batches_committed == commits_before + 1
    assert len(statements(rig.traces.writer, "BEGIN")) == 1
    assert len(statements(rig.traces.writer, "COMMIT")) == 1
    assert rig.traces.reader == [], "a create reads nothing before its write"
    # The run's own work (the Host call, its events) begins only after the answer.
    assert rig.executor.started == []
    # The row carries the session's context id, looked up inside that transaction.
    run = await get_run(rig.store, accepted["run_id"])
    session = await rig.store.fetch_one("SELECT context_id FROM sessions WHERE id = ?",
                                        (rig.session_id,))
    assert run is not None and session is not None
    assert run["status"] == "queued" and run["context_id"] == session["context_id"]
    assert rig.runs.active is not None
    assert rig.runs.active.context_id == session["context_id"]


async def test_a_create_in_a_missing_session_is_404_and_writes_nothing(rig: Rig) -> None:
    with pytest.raises(NotFound) as caught:
        await rig.runs.create("ses_missing", BODY)
    assert caught.value.detail()["error"] == "session_not_found"
    assert rig.runs.active is None, "the lock is given back"
    assert await rig.store.fetch_all("SELECT id FROM runs") == []
    assert await rig.store.fetch_all("SELECT seq FROM events") == []
    assert rig.executor.started == []


async def test_a_missing_session_is_404_even_while_a_run_holds_the_lock(rig: Rig) -> None:
    held = await rig.runs.create(rig.session_id, BODY)
    with pytest.raises(NotFound):
        await rig.runs.create("ses_missing", BODY)
    with pytest.raises(Conflict) as caught:
        await rig.runs.create(rig.session_id, BODY)
    assert caught.value.detail()["active_run_id"] == held["run_id"]


async def test_no_wal_checkpoint_runs_for_a_run(rig: Rig) -> None:
    """A create and its run's ending write no checkpoint on the writer's connection (the next
    create would wait behind it); a few short runs are far below the keeper's threshold."""
    # From an empty WAL (the schema's creation may have started the keeper: waited for).
    await rig.store.outside_transaction(
        lambda conn: conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall())
    assert waiting_frames(rig.store) == 0
    rig.traces.clear()
    for _ in range(5):
        await run_to_end(rig)
    assert [s for s in rig.traces.writer if "wal_checkpoint" in s.lower()] == []
    # Every frame the five runs wrote is still in the WAL: nothing copied any back.
    waiting = waiting_frames(rig.store)
    assert waiting is not None and 5 * 3 <= waiting < CHECKPOINT_FRAMES


async def test_the_wal_stays_bounded_under_runs_back_to_back(rig: Rig) -> None:
    """Runs one after another, the writer never idle long enough for its own checkpoint:
    the keeper checkpoints beside it, and the WAL file stays within a few thresholds."""
    wal = Path(f"{rig.db}-wal")
    biggest = 0
    for n in range(400):
        run_id = await run_to_end(rig)
        for i in range(10):  # ~2 KB of events a run
            rig.store.append_event(run_id, "output.delta", {"text": "x" * 200, "i": i})
        await rig.store.flush()
        biggest = max(biggest, wal.stat().st_size)
        if n > 50 and checkpoints(rig.store) >= 2:
            break
    assert checkpoints(rig.store) >= 2
    # 4 KiB pages (+ frame headers): the keeper's threshold, a commit or two past it while
    # the checkpoint runs, and SQLite's own backstop never needed.
    assert biggest <= 2 * CHECKPOINT_FRAMES * 4120 + 64 * 4120, biggest
    conn = sqlite3.connect(rig.db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        conn.close()


async def test_the_next_create_commits_before_the_ended_runs_compaction(rig: Rig) -> None:
    """A run ends and the next is created at once: the create does not queue behind the
    compaction of the run that just ended, which follows once the writer is quiet."""
    first = await run_to_end(rig)
    rig.traces.clear()
    # The scenario, not a synchronisation: a client's next POST comes a moment after it
    # read the end (a compaction started at once would commit within it).
    await asyncio.sleep(0.02)
    second = await rig.runs.create(rig.session_id, BODY)
    inserts = [s for s in rig.traces.writer if "INTO runs" in s or "INTO event_blocks" in s]
    assert inserts and "INTO runs" in inserts[0] and second["run_id"] in inserts[0], inserts
    await eventually(lambda: rig.compactor.events_compacted, lambda n: n > 0,
                     what="the ended run compacted", timeout=20)
    blocks = await rig.store.fetch_all("SELECT run_id FROM event_blocks")
    assert [b[0] for b in blocks] == [first]
