"""The retention policy on a real SQLite file: what it removes, what it never removes, and
the space it gives back."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

from llamon_playground.daemon.runs.reconcile import IMPORTED_ENDING
from llamon_playground.daemon.store.blobs import BlobStore
from llamon_playground.daemon.store.database import Store
from llamon_playground.daemon.store.event_log import ProjectEvents
from llamon_playground.daemon.store.history import create_session, insert_run
from llamon_playground.daemon.store.history_service import HistoryService, LiveRun
from llamon_playground.daemon.store.upkeep.retention import iso
from llamon_playground.daemon.store.upkeep.trimmer import Trimmer
from tests.unit.daemon.store.test_store import make_store

LONG_AGO = iso(datetime.now(UTC) - timedelta(days=400))


async def old_session(store: Store, name: str, runs: int = 2, status: str = "completed",
                      label: str | None = None, sha: str | None = None,
                      created_at: str = LONG_AGO) -> str:
    session = await create_session(store, name, {})
    await store.write(lambda c: c.execute("UPDATE sessions SET created_at = ? WHERE id = ?",
                                          (created_at, session["id"])))
    for i in range(runs):
        run_id = f"run_{name}_{i}"
        await insert_run(store, {"id": run_id, "session_id": session["id"],
                                 "status": status if i == runs - 1 else "completed",
                                 "label": label if i == 0 else None,
                                 "created_at": created_at, "context_id": "c",
                                 "input": {"parts": []}}, [sha] if sha else [])
        for n in range(300):
            store.append_event(run_id, "output.delta", {"text": f"{name} {n} " * 20})
    await store.flush()
    return str(session["id"])


def trimmer_for(store: Store, tmp_path: Path, live: LiveRun | None = None,
                **limits: float) -> Trimmer:
    """A trimmer removing through a history service told that `live` is the active run."""
    settings = replace(store._settings, **limits)  # type: ignore[arg-type]
    history = HistoryService(store, BlobStore(settings.files_dir), ProjectEvents(),
                             db_path=settings.db_path, live=lambda: live,
                             imported=IMPORTED_ENDING)
    return Trimmer(settings, store, history)


async def checkpoint_all(store: Store) -> None:
    """Every WAL frame copied into the file and the WAL truncated. The store's own keeper
    may be checkpointing beside it, on its own connection (SQLite then answers busy and
    copies what it can): asked again until it is not busy, within a deadline."""
    deadline = time.monotonic() + 30
    while True:
        busy = await store.outside_transaction(
            lambda c: c.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0])
        if not busy:
            return
        assert time.monotonic() < deadline, "the WAL never checkpointed whole"
        await asyncio.sleep(0.01)


def session_ids(tmp_path: Path) -> set[str]:
    conn = sqlite3.connect(tmp_path / ".llamon/playground/playground.sqlite3")
    try:
        return {r[0] for r in conn.execute("SELECT id FROM sessions")}
    finally:
        conn.close()


async def test_old_unlabelled_sessions_go_labelled_active_and_recent_ones_stay(
        tmp_path: Path) -> None:
    store = make_store(tmp_path)
    await store.open()
    try:
        blobs = BlobStore(store._settings.files_dir)
        shared = await blobs.put(b"shared")
        own = await blobs.put(b"only the old one's")
        gone = await old_session(store, "gone", sha=own)
        also_gone = await old_session(store, "also", sha=shared)
        labelled = await old_session(store, "labelled", label="keep me", sha=shared)
        active = await old_session(store, "active", status="running")
        recent = await old_session(store, "recent", created_at=iso(datetime.now(UTC)))
        trimmer = trimmer_for(store, tmp_path, history_max_age_days=30.0)
        report = await trimmer.report()
        assert report["plan"]["sessions"] == [gone, also_gone]
        assert report["plan"]["runs"] == 4
        assert session_ids(tmp_path) == {gone, also_gone, labelled, active, recent}

        done = await trimmer.trim()
        assert done["removed"] == {"sessions": 2, "runs": 4}
        assert session_ids(tmp_path) == {labelled, active, recent}
        # The blob only the removed session used is gone; the shared one stays.
        assert not blobs.exists(own) and blobs.exists(shared)
        conn = sqlite3.connect(tmp_path / ".llamon/playground/playground.sqlite3")
        assert conn.execute("SELECT COUNT(*) FROM events WHERE run_id LIKE 'run_gone%'"
                            ).fetchone()[0] == 0
        conn.close()
        # Over a size limit that nothing removable can meet: still only what may go.
        tiny = trimmer_for(store, tmp_path, history_max_bytes=1)
        assert (await tiny.trim())["removed"]["sessions"] == 0
        assert session_ids(tmp_path) == {labelled, active, recent}
    finally:
        await store.close()


async def test_the_active_runs_session_and_the_blobs_it_holds_stay(tmp_path: Path) -> None:
    # The run manager knows a run before history does: its session and the input files it
    # has written but not recorded yet are the history service's to keep, for a trim too.
    store = make_store(tmp_path)
    await store.open()
    try:
        blobs = BlobStore(store._settings.files_dir)
        held = await blobs.put(b"an input the starting run has written")
        starting = await old_session(store, "starting")
        other = await old_session(store, "other", sha=held)
        live = LiveRun("run_new", starting, frozenset({held}))
        done = await trimmer_for(store, tmp_path, live, history_max_age_days=30.0).trim()
        assert done["removed"] == {"sessions": 1, "runs": 2}
        assert session_ids(tmp_path) == {starting}
        assert other not in session_ids(tmp_path) and blobs.exists(held)
        assert done["blobs_removed"] == 0
    finally:
        await store.close()


async def test_over_the_size_limit_the_oldest_go_first_and_the_file_shrinks(
        tmp_path: Path) -> None:
    store = make_store(tmp_path)
    await store.open()
    try:
        ids = [await old_session(store, f"s{i}", runs=3) for i in range(8)]
        await checkpoint_all(store)
        db = tmp_path / ".llamon/playground/playground.sqlite3"
        before = db.stat().st_size
        report = await trimmer_for(store, tmp_path).report()
        used = report["plan"]["used_bytes"]
        assert report["incremental_vacuum"] is True  # a new file starts incremental
        trimmer = trimmer_for(store, tmp_path, history_max_bytes=used // 2)
        plan = (await trimmer.report())["plan"]["sessions"]
        assert plan == ids[:len(plan)] and 2 <= len(plan) < 8  # the oldest, in order
        await trimmer.trim()
        assert session_ids(tmp_path) == set(ids[len(plan):])
        await checkpoint_all(store)
        assert db.stat().st_size < before * 0.75
        conn = sqlite3.connect(db)
        assert conn.execute("PRAGMA freelist_count").fetchone()[0] == 0
        conn.close()
    finally:
        await store.close()


async def test_a_file_from_before_incremental_vacuum_is_switched_after_a_trim(
        tmp_path: Path) -> None:
    db = tmp_path / ".llamon/playground/playground.sqlite3"
    db.parent.mkdir(parents=True)
    sqlite3.connect(db).execute("PRAGMA page_size=4096").connection.close()
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE t (x)")  # the file exists with auto_vacuum off
    conn.execute("DROP TABLE t")
    conn.close()
    store = make_store(tmp_path)
    await store.open()
    try:
        ids = [await old_session(store, f"s{i}", runs=3) for i in range(6)]
        trimmer = trimmer_for(store, tmp_path, history_max_age_days=30.0)
        assert (await trimmer.report())["incremental_vacuum"] is False
        await trimmer.trim()
        assert session_ids(tmp_path) == set()
        assert (await trimmer.report())["incremental_vacuum"] is True
        assert len(ids) == 6
    finally:
        await store.close()


async def test_sessions_a_suite_reads_stay_with_the_suites_blobs_and_progress(
        tmp_path: Path) -> None:
    # A suite's report reads its cases' baseline runs and each suite run's case runs: the
    # sessions holding either stay; a blob only a suite case holds stays; a suite run's
    # progress (events under its own id, no run row) is neither a session's nor compacted.
    store = make_store(tmp_path)
    await store.open()
    try:
        blobs = BlobStore(store._settings.files_dir)
        in_case = await blobs.put(b"an input a suite case copied")
        gone = await old_session(store, "gone", sha=in_case)
        baseline = await old_session(store, "baseline")
        case = await old_session(store, "case")

        def suite(conn: sqlite3.Connection) -> None:
            conn.execute("INSERT INTO suites (id, name, created_at) VALUES ('s', 's', ?)",
                         (LONG_AGO,))
            conn.execute("INSERT INTO suite_cases (id, suite_id, position, kind, turns, "
                         "baseline) VALUES ('c', 's', 0, 'run', '[]', ?)",
                         ('{"run_ids": ["run_baseline_1"], "run_id": "run_baseline_1"}',))
            conn.execute("INSERT INTO suite_files (case_id, sha256) VALUES ('c', ?)",
                         (in_case,))
            conn.execute("UPDATE runs SET suite_run_id = 'srun_1', case_id = 'c' "
                         "WHERE id = 'run_case_0'")
        await store.write(suite)
        store.append_event("srun_1", "suite.status", {"status": "completed"})
        await store.flush()
        done = await trimmer_for(store, tmp_path, history_max_age_days=30.0).trim()
        assert done["removed"] == {"sessions": 1, "runs": 2}
        assert session_ids(tmp_path) == {baseline, case}
        assert gone not in session_ids(tmp_path) and blobs.exists(in_case)
        conn = sqlite3.connect(tmp_path / ".llamon/playground/playground.sqlite3")
        assert conn.execute("SELECT COUNT(*) FROM events WHERE run_id = 'srun_1'"
                            ).fetchone()[0] == 1
        conn.close()
    finally:
        await store.close()
