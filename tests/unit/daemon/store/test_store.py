"""The store on a real SQLite file: group commit, ordering, migrations, the lock backstop."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import orjson
import pytest

from llamon_playground.common.config import build_settings
from llamon_playground.daemon.errors import StoreError, UnsupportedDatabaseVersion
from llamon_playground.daemon.runs.reconcile import reconcile_runs
from llamon_playground.daemon.store.database import Store
from llamon_playground.daemon.store.history import (
    create_session,
    insert_run,
    list_runs,
    list_sessions,
)
from llamon_playground.daemon.store.migrations import SCHEMA_VERSION
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
        # No migration leaves a free page behind in a new file (a full disk would have room
        # to checkpoint into, which the disk drill does not expect).
        assert conn.execute("PRAGMA freelist_count").fetchone()[0] == 0
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
        assert [r.frame for r in rows] == [r.frame for r in published]
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
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    conn.close()
    before = db.read_bytes()
    store = make_store(tmp_path)
    with pytest.raises(UnsupportedDatabaseVersion):
        await store.open()
    assert db.read_bytes() == before and store.unsupported_version == SCHEMA_VERSION + 1
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


async def test_each_event_is_stored_once_as_its_frame_and_read_back_from_it(
        tmp_path: Path) -> None:
    """The frame built at commit is the only copy of an event: replay joins the stored
    frames, and the event's fields (history, recovery, bundles) are read from its data line
    (in Python and in SQL) exactly as they were appended."""
    from llamon_playground.daemon.store.frames import STATUS_SQL, build_frame, frame_payload
    from llamon_playground.daemon.store.records import compact_json
    store = make_store(tmp_path)
    await store.open()
    try:
        payloads = [{}, {"text": "héllo \"quoted\" 世界\n\\", "data:": "\n\ndata: x"},
                    {"status": "running"}, {"nested": {"a": [1, 2.5, None, True]}},
                    {"status": "completed", "reason": None}]
        kinds = ["run.status" if "status" in p else "x.y" for p in payloads]
        for kind, payload in zip(kinds, payloads, strict=True):
            store.append_event("run_f", kind, payload)
        store.append_event("other", "x.y", {"n": 1})
        await store.flush()
        records = await store.events_after("run_f", 0)
        assert [r.payload for r in records] == [compact_json(p) for p in payloads]
        assert [r.as_dict() for r in records] == [
            {"seq": r.seq, "run_id": "run_f", "kind": k, **p}
            for r, k, p in zip(records, kinds, payloads, strict=True)]
        built = [build_frame(r.seq, "run_f", k, compact_json(p))
                 for r, k, p in zip(records, kinds, payloads, strict=True)]
        data, last, terminal = await store.frames_after("run_f", 0)
        assert data == b"".join(built)
        assert last == records[-1].seq and terminal is True
        data, last, terminal = await store.frames_after("run_f", 0, limit=3)
        assert data == b"".join(built[:3]) and terminal is False
        assert await store.frames_after("run_f", records[-1].seq) == (b"", records[-1].seq, False)
        conn = sqlite3.connect(store_path(tmp_path))
        try:
            assert [c[1] for c in conn.execute("PRAGMA table_info(events)")] == [
                "seq", "run_id", "kind", "ts", "frame"]
            assert [frame_payload(f) for (f,) in conn.execute(
                "SELECT frame FROM events WHERE run_id = 'run_f' ORDER BY seq")] == payloads
            assert [s for (s,) in conn.execute(
                f"SELECT {STATUS_SQL} FROM events WHERE run_id = 'run_f' ORDER BY seq")] == [
                None, None, "running", None, "completed"]
        finally:
            conn.close()
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


async def test_an_urgent_event_commits_without_waiting_out_the_interval(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run's first output is appended urgent: right after a commit (the phases before it),
    it still commits at once. The interval is made an hour long here, so an event that
    lingered would never be published within the wait."""
    from llamon_playground.daemon.store import database
    monkeypatch.setattr(database, "COMMIT_INTERVAL", 3600.0)
    published: list[EventRecord] = []
    store = make_store(tmp_path, published)
    await store.open()
    try:
        await store.flush()  # a commit just now: the next plain batch would linger
        store.append_event("r", "output.delta", {"n": 1}, urgent=True)
        await eventually(lambda: len(published), lambda n: n == 1, "the urgent event")
    finally:
        await store.close()


async def test_the_project_stream_sends_a_run_status_as_its_stored_frame(
        tmp_path: Path) -> None:
    """The project-wide stream's run.status frame is the stored one: the same bytes it used
    to build from the event's fields."""
    from llamon_playground.daemon.store.event_log import ProjectEvents, sse_frame
    events = ProjectEvents()
    queue = events.subscribe()
    store = Store(build_settings(tmp_path, {"LLAMON_PLAYGROUND_RUNTIME_DIR": str(tmp_path)}),
                  on_commit=events.committed)
    await store.open()
    try:
        store.append_event("run_p", "output.delta", {"text": "x"})
        store.append_event("run_p", "run.status", {"status": "completed", "note": "é \""})
        await store.flush()
        record = (await store.events_after("run_p", 1))[0]
        assert queue.get_nowait() == sse_frame("run.status", record.as_dict(), record.seq)
        assert queue.empty()
    finally:
        await store.close()


OLD_PAYLOADS = [("output.delta", b'{"text":"a \\"\\u00e9\\" \xe4\xb8\x96"}'), ("x.y", b"{}"),
                ("run.status", b'{"status":"failed","reason":"host_exited"}')]


@pytest.mark.parametrize("version", [2, 3])
async def test_an_older_database_keeps_each_event_once_as_its_frame_and_replays_the_same(
        tmp_path: Path, version: int) -> None:
    """Version 2 kept payloads only; version 3 kept each payload and (for rows written by a
    version-3 daemon) its frame. Either is rebuilt into frame-only rows that replay the
    same bytes the daemon builds, whatever the row had."""
    from llamon_playground.daemon.store.frames import build_frame
    conn = old_database(tmp_path, version)
    rows = [(seq, "run_o", kind, payload) for seq, (kind, payload) in enumerate(OLD_PAYLOADS, 1)]
    conn.executemany("INSERT INTO events (seq, run_id, kind, payload, ts) "
                     "VALUES (?, ?, ?, ?, 't')", rows)
    if version == 3:  # a row the version-3 daemon framed itself; the others have NULL
        conn.execute("UPDATE events SET frame = ? WHERE seq = 1", (build_frame(*rows[0]),))
    conn.commit()
    conn.close()
    want = b"".join(build_frame(*row) for row in rows)
    store = make_store(tmp_path)
    await store.open()
    try:
        assert await store.frames_after("run_o", 0) == (want, 3, True)
        assert [(r.kind, orjson.loads(r.payload)) for r in await store.events_after("run_o", 0)
                ] == [(kind, orjson.loads(payload)) for kind, payload in OLD_PAYLOADS]
        store.append_event("run_o", "x.y", {})
        await store.flush()
        assert (await store.events_after("run_o", 3))[0].seq == 4
    finally:
        await store.close()
    conn = sqlite3.connect(store_path(tmp_path))
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert "payload" not in {c[1] for c in conn.execute("PRAGMA table_info(events)")}
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert [r[1] for r in conn.execute("PRAGMA index_list(events)")] == ["events_by_run"]
    finally:
        conn.close()


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
        await eventually(lambda: wal.stat().st_size, lambda size: size == 0,
                         "the WAL to be truncated", timeout=10)
        assert len(await store.events_after("r", 0, 1000)) == 300
    finally:
        await store.close()


async def test_the_list_queries_read_by_index_not_by_scanning(tmp_path: Path) -> None:
    """A year of history is 100,000 runs: no list page may read a table whole."""
    store = make_store(tmp_path)
    await store.open()
    seen: list[tuple[str, tuple[object, ...]]] = []
    real = store.fetch_all

    async def capture(sql: str, params: Any = ()) -> list[sqlite3.Row]:
        seen.append((sql, tuple(params)))
        return await real(sql, params)

    store.fetch_all = capture  # type: ignore[method-assign]
    try:
        session = await create_session(store, "s", {})
        await insert_run(store, {"id": "run_1", "session_id": session["id"],
                                 "status": "completed", "created_at": "now",
                                 "context_id": "c", "input": {"parts": []}}, [])
        for newest_first in (False, True):
            await list_sessions(store, 0, 10, newest_first)
            await list_runs(store, session["id"], 0, 10, newest_first)
    finally:
        store.fetch_all = real  # type: ignore[method-assign]
        await store.close()
    conn = sqlite3.connect(tmp_path / ".llamon/playground/playground.sqlite3")
    try:
        plans = {sql: [row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}", params)]
                 for sql, params in seen if "pragma_table_info" not in sql}
    finally:
        conn.close()
    assert len(plans) == 4
    for sql, plan in plans.items():
        scans = [step for step in plan if step.startswith("SCAN")
                 and "VIRTUAL TABLE" not in step and "USING" not in step]
        assert not scans, (sql, plan)
        assert any("runs_by_session" in step for step in plan), (sql, plan)


async def test_lazy_writes_wait_for_the_first_output_and_commit_with_it_in_order(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run's phases, status moves and row updates are queued lazy: right after a quiet
    spell they do not commit on their own but wait for the run's first output, and go in its
    transaction, in the order they were queued (one fsync, not two). The linger is made an
    hour long here, so a lazy write that committed alone would be its own batch."""
    from llamon_playground.daemon.store import database
    monkeypatch.setattr(database, "LAZY_LINGER", 3600.0)
    published: list[list[EventRecord]] = []
    settings = build_settings(tmp_path, {"LLAMON_PLAYGROUND_RUNTIME_DIR": str(tmp_path / "rt")})
    store = Store(settings, on_commit=lambda rows: published.append(
        [EventRecord.from_row(row) for row in rows]))
    await store.open()
    try:
        await store.flush()
        before = store.batches_committed
        store.append_event("r", "run.phase", {"n": 1}, lazy=True)
        store.submit(lambda conn: None, lazy=True)
        store.append_event("r", "run.phase", {"n": 2}, lazy=True)
        # Let the writer run: a write that is not lazy would have committed by now.
        for _ in range(20):
            await asyncio.sleep(0)
        await asyncio.sleep(0.05)
        assert store.batches_committed == before and published == []
        store.append_event("r", "output.delta", {"n": 3}, urgent=True)
        await eventually(lambda: len(published), lambda n: n == 1, "the first output")
        assert [r.as_dict()["n"] for r in published[0]] == [1, 2, 3]
        assert store.batches_committed == before + 1
        seqs = [r.seq for r in published[0]]
        assert seqs == sorted(seqs)
    finally:
        await store.close()


async def test_a_lazy_write_alone_still_commits_within_its_linger(tmp_path: Path) -> None:
    """A run that never answers (a Host that hangs before its first token) still has its
    phases committed and published: a lazy write waits for company, not forever."""
    published: list[EventRecord] = []
    store = make_store(tmp_path, published)
    await store.open()
    try:
        await store.flush()
        store.append_event("r", "run.phase", {"n": 1}, lazy=True)
        await eventually(lambda: len(published), lambda n: n == 1, "the lazy event")
        assert (await store.events_after("r", 0))[0].as_dict()["n"] == 1
    finally:
        await store.close()


async def test_a_write_that_is_not_lazy_takes_the_lazy_ones_along_at_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only lazy writes linger: a diagnostic (or any plain event) after them commits them by
    the quiet-spell rule, in order, without waiting out the linger (an hour here)."""
    from llamon_playground.daemon.store import database
    monkeypatch.setattr(database, "LAZY_LINGER", 3600.0)
    published: list[EventRecord] = []
    store = make_store(tmp_path, published)
    await store.open()
    try:
        store.append_event("r", "run.phase", {"n": 1}, lazy=True)
        store.append_event("r", "diagnostic", {"n": 2})
        await eventually(lambda: len(published), lambda n: n == 2, "both events")
        assert [r.as_dict()["n"] for r in published] == [1, 2]
    finally:
        await store.close()


async def test_a_marker_is_done_once_what_came_before_it_is_committed_and_published(
        tmp_path: Path) -> None:
    """A run waits on a marker before it reads more of a long answer: when it is done, the
    first output queued before it is durable and its subscribers have it. A failed commit
    ends it too (with the failure), so nothing waits on it forever."""
    published: list[EventRecord] = []
    settings = build_settings(tmp_path, {"LLAMON_PLAYGROUND_RUNTIME_DIR": str(tmp_path / "rt"),
                                         "LLAMON_PLAYGROUND_DB_BUSY_TIMEOUT_MS": "50"})
    store = Store(settings,
                  on_commit=lambda rows: published.extend(map(EventRecord.from_row, rows)))
    await store.open()
    try:
        store.append_event("r", "run.phase", {"n": 1}, lazy=True)
        store.append_event("r", "output.delta", {"n": 2}, urgent=True)
        marker = store.marker()
        store.append_event("r", "output.delta", {"n": 3})
        await asyncio.wait_for(marker, 20)
        assert [r.as_dict()["n"] for r in published][:2] == [1, 2]
        other = sqlite3.connect(store_path(tmp_path))
        committed = other.execute("SELECT count(*) FROM events WHERE seq <= 2").fetchone()[0]
        other.close()
        assert committed == 2
        blocker = sqlite3.connect(store_path(tmp_path), isolation_level=None)
        blocker.execute("BEGIN IMMEDIATE")
        failing = store.marker()
        with pytest.raises(StoreError):
            await asyncio.wait_for(failing, 20)
        blocker.execute("ROLLBACK")
        blocker.close()
    finally:
        await store.close()
