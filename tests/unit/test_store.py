"""The store on a real SQLite file: group commit, ordering, migrations, the lock backstop."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from llamon_playground.common.config import build_settings
from llamon_playground.daemon.errors import StoreError, UnsupportedDatabaseVersion
from llamon_playground.daemon.store.database import Store
from llamon_playground.daemon.store.history import create_session, insert_run, list_runs
from llamon_playground.daemon.store.migrations import SCHEMA_VERSION
from llamon_playground.daemon.store.reconcile import reconcile_runs
from llamon_playground.daemon.store.records import EventRecord
from tests.support.waiting import eventually


def make_store(tmp_path: Path, published: list[EventRecord] | None = None) -> Store:
    settings = build_settings(tmp_path, {"LLAMON_PLAYGROUND_RUNTIME_DIR": str(tmp_path / "rt")})
    sink = published if published is not None else []
    return Store(settings, on_commit=lambda rows: sink.extend(map(EventRecord.from_row, rows)))


async def test_open_is_lazy_and_sets_wal_and_version(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    assert not (tmp_path / ".llamon").exists()
    await store.open()
    try:
        conn = sqlite3.connect(tmp_path / ".llamon/playground/playground.sqlite3")
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        conn.close()
    finally:
        await store.close()


async def test_appends_are_group_committed_in_order_and_published_after_commit(
        tmp_path: Path) -> None:
    published: list[EventRecord] = []
    store = make_store(tmp_path, published)
    await store.open()
    try:
        for i in range(5000):
            store.append_event("run_a", "output.delta", {"text": f"t{i}"})
        await store.flush()
        assert [r.seq for r in published] == list(range(1, 5001))
        rows = await store.events_after("run_a", 0, limit=10000)
        assert [r.payload for r in rows] == [r.payload for r in published]
        assert rows[0].as_dict() == {"seq": 1, "run_id": "run_a", "kind": "output.delta",
                                     "text": "t0"}
        # 5000 appends queued without awaiting went into a handful of transactions.
        assert store.batches_committed <= 5
    finally:
        await store.close()


async def test_seq_continues_after_reopen(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    await store.open()
    store.append_event("r", "k", {})
    await store.flush()
    await store.close()
    published: list[EventRecord] = []
    store = make_store(tmp_path, published)
    await store.open()
    store.append_event("r", "k", {})
    await store.flush()
    await store.close()
    assert [r.seq for r in published] == [2]


async def test_failed_op_rolls_back_only_itself(tmp_path: Path) -> None:
    published: list[EventRecord] = []
    store = make_store(tmp_path, published)
    await store.open()
    try:
        def bad(conn: sqlite3.Connection) -> None:
            conn.execute("INSERT INTO no_such_table VALUES (1)")
        store.append_event("r", "k", {"n": 1})
        with pytest.raises(sqlite3.OperationalError):
            await store.write(bad)
        store.append_event("r", "k", {"n": 2})
        await store.flush()
        assert [r.as_dict()["n"] for r in await store.events_after("r", 0)] == [1, 2]
    finally:
        await store.close()


async def test_one_active_run_is_enforced_by_the_database_too(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    await store.open()
    try:
        session = await create_session(store, "s", {})
        row = {"session_id": session["id"], "status": "running", "created_at": "now",
               "context_id": "c", "input": {"parts": []}}
        await insert_run(store, {"id": "run_1", **row}, [])
        with pytest.raises(sqlite3.IntegrityError):
            await insert_run(store, {"id": "run_2", **row, "status": "queued"}, [])
        assert await reconcile_runs(store, "daemon_restarted") == ["run_1"]
        await insert_run(store, {"id": "run_3", **row}, [])
    finally:
        await store.close()


async def test_a_sessions_runs_page_newest_first_as_well_as_oldest_first(
        tmp_path: Path) -> None:
    store = make_store(tmp_path)
    await store.open()
    try:
        session = await create_session(store, "s", {})
        other = await create_session(store, "other", {})
        row = {"status": "completed", "created_at": "now", "context_id": "c",
               "input": {"parts": []}}
        for n in range(5):
            await insert_run(store, {"id": f"run_{n}", "session_id": session["id"], **row}, [])
            await insert_run(store, {"id": f"run_x{n}", "session_id": other["id"], **row}, [])

        async def pages(newest_first: bool) -> list[list[str]]:
            seen, after = [], 0
            while True:
                runs, cursor = await list_runs(store, session["id"], after, 2, newest_first)
                seen.append([r["id"] for r in runs])
                if cursor is None:
                    return seen
                after = int(cursor)

        assert await pages(False) == [["run_0", "run_1"], ["run_2", "run_3"], ["run_4"]]
        assert await pages(True) == [["run_4", "run_3"], ["run_2", "run_1"], ["run_0"]]
    finally:
        await store.close()


async def test_newer_database_refused_untouched(tmp_path: Path) -> None:
    db = tmp_path / ".llamon/playground/playground.sqlite3"
    db.parent.mkdir(parents=True)
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA user_version = 7")
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    conn.close()
    before = db.read_bytes()
    store = make_store(tmp_path)
    with pytest.raises(UnsupportedDatabaseVersion):
        await store.open()
    assert db.read_bytes() == before and store.unsupported_version == 7
    with pytest.raises(StoreError):
        await store.write(_noop)


async def test_write_failure_degrades_keeps_events_and_recovers(tmp_path: Path) -> None:
    """SQLite refuses the commit for real: another connection holds the write lock past
    the busy timeout. Ops fail at once; events are kept and committed after recovery."""
    published: list[EventRecord] = []
    degraded: list[StoreError] = []
    settings = build_settings(tmp_path, {"LLAMON_PLAYGROUND_RUNTIME_DIR": str(tmp_path / "rt"),
                                         "LLAMON_PLAYGROUND_DB_BUSY_TIMEOUT_MS": "50"})
    store = Store(settings,
                  on_commit=lambda rows: published.extend(map(EventRecord.from_row, rows)),
                  on_degraded=degraded.append)
    await store.open()
    try:
        blocker = sqlite3.connect(store_path(tmp_path), isolation_level=None)
        blocker.execute("BEGIN IMMEDIATE")
        store.append_event("r", "k", {"n": 1})
        with pytest.raises(StoreError):
            await store.write(_noop)
        assert store.degraded and len(degraded) == 1 and published == []
        blocker.execute("ROLLBACK")
        blocker.close()
        store.append_event("r", "k", {"n": 2})
        await store.flush()
        assert not store.degraded
        assert [r.seq for r in published] == [1, 2]
        assert [r.as_dict()["n"] for r in await store.events_after("r", 0)] == [1, 2]
    finally:
        await store.close()


def store_path(tmp_path: Path) -> Path:
    return tmp_path / ".llamon/playground/playground.sqlite3"


def _noop(conn: sqlite3.Connection) -> None:
    return None


async def test_sql_built_frames_match_python_frames(tmp_path: Path) -> None:
    from llamon_playground.daemon.store.event_log import frame
    store = make_store(tmp_path)
    await store.open()
    try:
        payloads = [{}, {"text": "héllo \"quoted\" 世界\n"}, {"status": "running"},
                    {"nested": {"a": [1, 2.5, None, True]}}, {"status": "completed"}]
        for i, payload in enumerate(payloads):
            store.append_event("run_f", "run.status" if "status" in payload else "x.y", payload)
        store.append_event("other", "x.y", {"n": 1})
        await store.flush()
        records = await store.events_after("run_f", 0)
        data, last, terminal = await store.frames_after("run_f", 0)
        assert data == b"".join(frame(r).data for r in records)
        assert last == records[-1].seq and terminal is True
        data, last, terminal = await store.frames_after("run_f", 0, limit=3)
        assert data == b"".join(frame(r).data for r in records[:3]) and terminal is False
        assert await store.frames_after("run_f", records[-1].seq) == (b"", records[-1].seq, False)
    finally:
        await store.close()


def old_database(tmp_path: Path, version: int) -> sqlite3.Connection:
    """A database as a daemon of schema `version` left it (no rows yet), opened."""
    from llamon_playground.daemon.store.migrations import MIGRATIONS, split_sql
    db = store_path(tmp_path)
    db.parent.mkdir(parents=True)
    conn = sqlite3.connect(db)
    for script in MIGRATIONS[:version]:
        for statement in split_sql(script):
            conn.execute(statement)
    conn.execute(f"PRAGMA user_version = {version}")
    return conn


async def test_a_stream_of_events_commits_once_per_interval_and_a_waiter_at_once(
        tmp_path: Path) -> None:
    """Token-by-token appends share a transaction per COMMIT_INTERVAL instead of paying one
    commit (and its thread hand-offs) each; a write someone awaits does not wait for that."""
    import time

    from llamon_playground.daemon.store.database import COMMIT_INTERVAL
    published: list[EventRecord] = []
    store = make_store(tmp_path, published)
    await store.open()
    try:
        await store.flush()
        before = store.batches_committed
        started = time.monotonic()
        for n in range(100):
            store.append_event("r", "output.delta", {"n": n})
            await asyncio.sleep(0.002)  # a Host's pace: time for a commit between tokens
        await store.flush()
        elapsed = time.monotonic() - started
        assert [r.as_dict()["n"] for r in published] == list(range(100))
        # Without the interval this is about one batch per append.
        assert store.batches_committed - before <= elapsed / COMMIT_INTERVAL + 3
        store.append_event("r", "output.delta", {"n": 100})
        store.append_event("r", "output.delta", {"n": 101})
        assert await store.write(lambda conn: 7) == 7  # commits the queued events with it
        assert published[-1].as_dict()["n"] == 101
    finally:
        await store.close()


async def test_each_event_commits_with_its_frame_and_rows_without_one_replay_the_same(
        tmp_path: Path) -> None:
    """Replay copies the frame stored at commit; a row from before the frame column (NULL)
    gets the same bytes built by the query, so a migrated history replays unchanged."""
    from llamon_playground.daemon.store.event_log import frame
    store = make_store(tmp_path)
    await store.open()
    try:
        for n in range(5):
            store.append_event("run_s", "output.delta", {"text": f"t{n} \"é\"", "n": n})
        await store.write_with_events(lambda conn: None,
                                      [("run_s", "run.status", {"status": "completed"})])
        records = await store.events_after("run_s", 0)
        stored, last, terminal = await store.frames_after("run_s", 0)
        assert stored == b"".join(frame(r).data for r in records)
        assert last == records[-1].seq and terminal is True
        conn = sqlite3.connect(store_path(tmp_path))
        frames = [f for (f,) in conn.execute(
            "SELECT frame FROM events WHERE run_id = 'run_s' ORDER BY seq")]
        assert frames == [frame(r).data for r in records]
        conn.execute("UPDATE events SET frame = NULL WHERE run_id = 'run_s' AND seq % 2 = 0")
        conn.commit()
        conn.close()
        assert await store.frames_after("run_s", 0) == (stored, last, True)
    finally:
        await store.close()


async def test_a_second_version_database_gets_the_frame_column_and_replays_its_events(
        tmp_path: Path) -> None:
    from llamon_playground.daemon.store.event_log import frame
    conn = old_database(tmp_path, 2)
    conn.executemany("INSERT INTO events (seq, run_id, kind, payload, ts) VALUES (?, ?, ?, ?, 't')",
                     [(1, "run_o", "output.delta", b'{"text":"a"}'),
                      (2, "run_o", "run.status", b'{"status":"failed"}')])
    conn.commit()
    conn.close()
    store = make_store(tmp_path)
    await store.open()
    try:
        records = await store.events_after("run_o", 0)
        assert await store.frames_after("run_o", 0) == (
            b"".join(frame(r).data for r in records), 2, True)
        store.append_event("run_o", "x.y", {})
        await store.flush()
        assert (await store.events_after("run_o", 2))[0].seq == 3
    finally:
        await store.close()


async def test_a_first_version_database_migrates_forward_keeping_its_runs(
        tmp_path: Path) -> None:
    from llamon_playground.daemon.store.history import get_run
    db = store_path(tmp_path)
    conn = old_database(tmp_path, 1)
    conn.execute("INSERT INTO sessions (id, context_id, created_at) VALUES ('ses_a', 'c', 't')")
    conn.execute("INSERT INTO runs (id, session_id, status, created_at, context_id, input, "
                 "label) VALUES ('run_a', 'ses_a', 'completed', 't', 'c', '{\"parts\": []}', "
                 "'old')")
    conn.commit()
    conn.close()
    store = make_store(tmp_path)
    await store.open()
    try:
        run = await get_run(store, "run_a")
        assert run is not None and run["label"] == "old"
        assert run["note"] is None and run["code_fingerprint"] is None
        assert run["edited"] is False and run["edited_fields"] == []
    finally:
        await store.close()
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    conn.close()


def test_score_summary_counts_each_evaluator_once_its_latest_entry_deciding() -> None:
    from llamon_playground.daemon.store.history import score_summary
    scores = [{"evaluator": "judge", "score": 0, "passStatus": "fail"},
              {"evaluator": "judge", "score": 1, "passStatus": "pass"},
              {"evaluator": "plain", "score": 1}]
    assert score_summary(scores) == {"evaluators": 2, "failed": 0}
    assert score_summary([*scores, {"evaluator": "plain", "passStatus": "failed"}]) == \
        {"evaluators": 2, "failed": 1}


async def test_the_wal_is_checkpointed_and_truncated_once_the_writer_idles(
        tmp_path: Path) -> None:
    """A stream of small commits grows the WAL; an idle writer gives its space back (a
    small disk would otherwise fill with frames long copied into the database)."""
    store = make_store(tmp_path)
    await store.open()
    wal = Path(str(store_path(tmp_path)) + "-wal")
    try:
        for n in range(300):
            store.append_event("r", "output.delta", {"text": "x" * 200, "n": n})
            await store.flush()
        assert wal.stat().st_size > 100_000
        await eventually(lambda: asyncio.sleep(0, wal.stat().st_size), lambda size: size == 0,
                         "the WAL to be truncated", timeout=10)
        assert len(await store.events_after("r", 0, 1000)) == 300
    finally:
        await store.close()
