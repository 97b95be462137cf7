"""Deleting all history at size, against a real SQLite store and file store in process:
the deletion goes in steps other writes commit between, what is made meanwhile stays, the
freed pages go back to the filesystem, and the reads of deletion and export use indexes."""

from __future__ import annotations

import asyncio
import re
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import orjson
import pytest

from llamon_playground.common.config import Settings, build_settings
from llamon_playground.daemon.runs.reconcile import IMPORTED_ENDING
from llamon_playground.daemon.store.blobs import BlobStore
from llamon_playground.daemon.store.bundles import read_selection
from llamon_playground.daemon.store.database import Store
from llamon_playground.daemon.store.event_log import ProjectEvents
from llamon_playground.daemon.store.history import insert_run
from llamon_playground.daemon.store.history_service import HistoryService
from llamon_playground.daemon.store.removal import deletion
from llamon_playground.daemon.store.removal.space import vacuum_step
from tests.support.history_bundles import many_sessions
from tests.support.waiting import eventually

SESSIONS = 1500
RUNS = 4


class World:
    """A store, a file store and the history service over them; no run is active."""

    def __init__(self, settings: Settings, store: Store) -> None:
        self.settings = settings
        self.store = store
        self.blobs = BlobStore(settings.files_dir)
        self.history = HistoryService(store, self.blobs, ProjectEvents(),
                                      db_path=settings.db_path, live=lambda: None,
                                      imported=IMPORTED_ENDING)

    async def count(self, sql: str) -> int:
        row = await self.store.fetch_one(sql)
        assert row is not None
        return int(row[0])


@pytest.fixture
async def world(tmp_path: Path) -> AsyncIterator[World]:
    settings = build_settings(tmp_path, {"LLAMON_PLAYGROUND_RUNTIME_DIR": str(tmp_path / "rt")})
    store = Store(settings, on_commit=lambda rows: None)
    await store.open()
    yield World(settings, store)
    await store.close()


async def test_delete_all_goes_in_steps_that_other_writes_commit_between(
        world: World) -> None:
    answer = await world.history.import_(orjson.dumps(many_sessions(SESSIONS, RUNS)))
    last = answer["sessions"][f"s{SESSIONS - 1}"]
    deleting = asyncio.create_task(world.history.delete_all())
    # Some sessions are gone: the deletion is under way.
    await eventually(lambda: world.count("SELECT COUNT(*) FROM sessions"),
                     lambda n: n < SESSIONS, what="the deletion under way", interval=0.001)
    # A write asked for now commits at once, between two steps, not after the deletion.
    made = await world.history.create_session({"title": "made meanwhile"})
    await insert_run(world.store, {
        "id": "run_meanwhile", "session_id": last, "status": "completed",
        "created_at": "2026-01-02T00:00:00.000Z", "context_id": "c",
        "input": {"parts": [{"kind": "text", "text": "started meanwhile"}]}}, [])
    left = await world.count("SELECT COUNT(*) FROM sessions WHERE title != 'made meanwhile'")
    assert 0 < left < SESSIONS
    assert not deleting.done()
    done = await deleting
    # What was made while it ran stays: the new session, and the old session a run was
    # started in, with that run only.
    assert done["deleted"] == {"sessions": SESSIONS - 1, "runs": SESSIONS * RUNS,
                               "events": SESSIONS * RUNS * 4, "suites": 0}
    assert done["blobs_removed"] == 1
    rows = await world.store.fetch_all("SELECT id FROM sessions ORDER BY rowid")
    assert [r[0] for r in rows] == [last, made["id"]]
    rows = await world.store.fetch_all("SELECT id FROM runs")
    assert [r[0] for r in rows] == ["run_meanwhile"]
    assert await world.count("SELECT COUNT(*) FROM events") == 0
    assert await world.count("SELECT COUNT(*) FROM event_blocks") == 0
    assert await world.count("SELECT COUNT(*) FROM run_search") == 1
    assert list(world.settings.files_dir.iterdir()) == []
    # The freed pages went back to the filesystem.
    assert await world.count("PRAGMA freelist_count") == 0


def test_an_incremental_vacuum_step_gives_back_many_pages(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "v.db", isolation_level=None)
    try:
        conn.execute("PRAGMA auto_vacuum=INCREMENTAL")
        conn.execute("PRAGMA synchronous=OFF")
        conn.execute("CREATE TABLE t (x)")
        conn.execute("BEGIN")
        conn.executemany("INSERT INTO t VALUES (randomblob(3000))", [()] * 2000)
        conn.execute("COMMIT")
        conn.execute("DELETE FROM t")
        free = conn.execute("PRAGMA freelist_count").fetchone()[0]
        assert free > 1000
        conn.execute("BEGIN IMMEDIATE")
        left = vacuum_step(conn)
        conn.execute("COMMIT")
        # One `PRAGMA incremental_vacuum(N)` statement gives back one page in Python.
        after = conn.execute("PRAGMA freelist_count").fetchone()[0]
        assert free - after >= 64 and left == (after > 0)
    finally:
        conn.close()


BIG_TABLES = ("sessions", "runs", "events", "event_blocks", "run_files", "run_search")
SCAN = re.compile(rf"\bSCAN ({'|'.join(BIG_TABLES)})\b")


async def test_a_deletion_step_and_a_session_export_read_by_index(world: World) -> None:
    answer = await world.history.import_(orjson.dumps(many_sessions(50, RUNS)))
    await world.store.close()
    conn = sqlite3.connect(world.settings.db_path, isolation_level=None)
    conn.row_factory = sqlite3.Row
    statements: list[str] = []
    try:
        conn.execute("BEGIN IMMEDIATE")
        conn.set_trace_callback(statements.append)
        read_selection(conn, [answer["sessions"]["s40"]], None)
        read_selection(conn, None, [answer["runs"]["r41-3"]])
        conn.set_trace_callback(None)
        deletion.begin(conn)  # notes everything: it reads every row on purpose
        conn.set_trace_callback(statements.append)
        deletion.step(conn)
        conn.set_trace_callback(None)
        for sql in deletion.CREATE_TEMP:  # the last step dropped its notes: back, to explain
            conn.execute(sql)
        plans = {sql: " / ".join(r["detail"] for r in conn.execute(f"EXPLAIN QUERY PLAN {sql}"))
                 for sql in statements if sql.lstrip().upper().startswith(
                     ("SELECT", "DELETE", "UPDATE", "INSERT"))}
        conn.execute("ROLLBACK")
    finally:
        conn.close()
    assert any("runs_by_parent" in plan for plan in plans.values())
    # The last step counts what is left, a thousand rows at most, to rebuild the search
    # index from: the one read that is not by index, and bounded.
    scans = {sql: plan for sql, plan in plans.items()
             if SCAN.search(plan) and sql != deletion.LEFT_SQL}
    assert scans == {}
    assert len(plans) > 10
