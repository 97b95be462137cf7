"""Finished runs kept in blocks: replay, bundles' reads and cursors give the same bytes as
the rows did, across the hand-over; the sweep resumes where it stopped."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path
from typing import Any

from llamon_playground.daemon.store.database import Store
from llamon_playground.daemon.store.frames import stored_events
from llamon_playground.daemon.store.history import create_session, insert_run, update_run
from llamon_playground.daemon.store.upkeep.compaction import (
    STEP_EVENTS,
    Compactor,
    compact_step,
    read_mark,
)
from tests.unit.daemon.store.test_store import make_store

# Every kind a run's stream holds, with payloads that stress the frame's bytes.
KINDS: list[tuple[str, dict[str, Any]]] = [
    ("run.status", {"status": "running", "previous": "queued"}),
    ("run.phase", {"phase": "validate", "state": "started"}),
    ("output.delta", {"text": "héllo \"wörld\"\n\\ ✓", "artifact_id": "a1", "append": True}),
    ("output.delta", {"text": ""}),
    ("trace", {"name": "node", "data": {"nested": [1, 2.5, None, {"x": "id: 3\n\n"}]}}),
    ("diagnostic", {"level": "warning", "code": "history_degraded", "message": "m"}),
    ("run.output", {"parts": [{"kind": "text", "text": "done"}]}),
    ("run.phase", {"phase": "complete", "state": "completed", "status": "completed"}),
]


async def finished_run(store: Store, session_id: str, run_id: str, deltas: int) -> None:
    await insert_run(store, {"id": run_id, "session_id": session_id, "status": "running",
                             "created_at": "2026-01-01T00:00:00.000Z", "context_id": "c",
                             "input": {"parts": []}}, [])
    for kind, payload in KINDS[:3]:
        store.append_event(run_id, kind, payload)
    for i in range(deltas):
        store.append_event(run_id, "output.delta", {"text": f"tok{i} "})
    for kind, payload in KINDS[3:]:
        store.append_event(run_id, kind, payload)
    await update_run(store, run_id, {"status": "completed"})
    store.append_event(run_id, "run.status", {"status": "completed", "previous": "running"})
    await store.flush()


async def replay(store: Store, run_id: str, after: int = 0) -> list[bytes]:
    pages = []
    while True:
        data, last, terminal = await store.frames_after(run_id, after, 2000)
        if not data:
            return pages
        pages.append(data)
        after = last
        if terminal:
            return pages


def db_conn(tmp_path: Path) -> sqlite3.Connection:
    return sqlite3.connect(tmp_path / ".llamon/playground/playground.sqlite3")


async def sweep(store: Store) -> int:
    steps = 0
    while (await store.write(compact_step)).more:
        steps += 1
    return steps + 1


async def test_compaction_keeps_every_kind_byte_for_byte_and_cursors_exact(
        tmp_path: Path) -> None:
    store = make_store(tmp_path)
    await store.open()
    try:
        session = await create_session(store, "s", {})
        await finished_run(store, session["id"], "run_a", 5000)
        await finished_run(store, session["id"], "run_b", 10)
        before = {r: b"".join(await replay(store, r)) for r in ("run_a", "run_b")}
        conn = db_conn(tmp_path)
        rows_before = stored_events(conn, ["run_a", "run_b"])
        seqs = [r[0] for r in rows_before if r[1] == "run_a"]
        cursors = [0, seqs[0], seqs[1000], seqs[1023], seqs[1024], seqs[-2], seqs[-1]]
        pieces_before = {c: b"".join(await replay(store, "run_a", c)) for c in cursors}

        assert await sweep(store) >= 2  # 10,000+ events: more than one small step
        after = {r: b"".join(await replay(store, r)) for r in ("run_a", "run_b")}
        assert after == before
        for c in cursors:
            assert b"".join(await replay(store, "run_a", c)) == pieces_before[c]
        assert stored_events(conn, ["run_a", "run_b"]) == rows_before
        # Only the terminal run.status of each run is still a row; the rest are blocks.
        assert conn.execute("SELECT run_id, kind FROM events ORDER BY seq").fetchall() == [
            ("run_a", "run.status"), ("run_b", "run.status")]
        assert conn.execute("SELECT COUNT(*) FROM event_blocks").fetchone()[0] >= 5
        # A run's blocks go with it.
        conn.close()
        await store.write(lambda c: c.execute("DELETE FROM runs WHERE id = 'run_b'"))
        conn = db_conn(tmp_path)
        assert conn.execute("SELECT COUNT(*) FROM event_blocks WHERE run_id = 'run_b'"
                            ).fetchone()[0] == 0
        conn.close()
    finally:
        await store.close()


async def test_a_replay_page_by_page_sees_no_gap_or_duplicate_while_the_run_compacts(
        tmp_path: Path) -> None:
    store = make_store(tmp_path)
    await store.open()
    try:
        session = await create_session(store, "s", {})
        await finished_run(store, session["id"], "run_a", 3 * STEP_EVENTS)
        whole = b"".join(await replay(store, "run_a"))
        # A reader that reads a page, then the compactor moves a step, and so on.
        rng = random.Random(5)
        got, after = [], 0
        while True:
            data, last, terminal = await store.frames_after("run_a", after, rng.randint(1, 3000))
            if rng.random() < 0.5:
                await store.write(compact_step)
            if not data:
                break
            got.append(data)
            after = last
            if terminal:
                break
        assert b"".join(got) == whole
    finally:
        await store.close()


async def test_the_sweep_stops_at_the_active_run_and_resumes_from_its_mark(
        tmp_path: Path) -> None:
    store = make_store(tmp_path)
    await store.open()
    try:
        session = await create_session(store, "s", {})
        await finished_run(store, session["id"], "run_a", 50)
        await insert_run(store, {"id": "run_live", "session_id": session["id"],
                                 "status": "running", "created_at": "x", "context_id": "c",
                                 "input": {"parts": []}}, [])
        store.append_event("run_live", "output.delta", {"text": "still going"})
        await store.flush()
        await sweep(store)
        conn = db_conn(tmp_path)
        mark = conn.execute("SELECT rowid FROM runs WHERE id = 'run_a'").fetchone()[0]
        assert await store.write(read_mark) == mark
        assert conn.execute("SELECT COUNT(*) FROM events WHERE run_id = 'run_live'"
                            ).fetchone()[0] == 1
        conn.close()
    finally:
        await store.close()


async def test_a_suite_runs_progress_stays_readable_beside_its_compacted_case_runs(
        tmp_path: Path) -> None:
    # A suite run's progress is stored under its own id with no run row: the sweep, which
    # walks runs, leaves it in rows, and its replay ends at its terminal suite.status.
    store = make_store(tmp_path)
    await store.open()
    try:
        session = await create_session(store, "s", {})
        store.append_event("srun_1", "suite.status", {"status": "running"})
        await finished_run(store, session["id"], "run_case", 50)
        store.append_event("srun_1", "suite.case", {"case_id": "c", "state": "done"})
        store.append_event("srun_1", "suite.status", {"status": "completed"})
        await store.flush()
        before = await replay(store, "srun_1")
        await sweep(store)
        conn = db_conn(tmp_path)
        try:
            assert conn.execute("SELECT COUNT(*) FROM events WHERE run_id = 'srun_1'"
                                ).fetchone()[0] == 3
            assert conn.execute("SELECT COUNT(*) FROM event_blocks WHERE run_id = 'run_case'"
                                ).fetchone()[0] >= 1
        finally:
            conn.close()
        assert await replay(store, "srun_1") == before and len(before) == 1
        assert b"suite.case" in before[0]
    finally:
        await store.close()


async def test_the_pages_a_large_compaction_frees_go_back_to_the_filesystem(
        tmp_path: Path) -> None:
    store = make_store(tmp_path)
    await store.open()
    try:
        session = await create_session(store, "t", {})
        await insert_run(store, {"id": "r_big", "session_id": session["id"],
                                 "status": "running", "created_at": "2026-01-01T00:00:00.000Z",
                                 "context_id": "c", "input": {"parts": []}}, [])
        # Rows that compress well: the blocks take a fraction of the pages the rows did.
        filler = "the same words again " * 40
        for i in range(6000):
            store.append_event("r_big", "output.delta", {"text": f"{i} {filler}"})
        await update_run(store, "r_big", {"status": "completed"})
        store.append_event("r_big", "run.status", {"status": "completed", "previous": "running"})
        await store.flush()
        before = await replay(store, "r_big")
        db = tmp_path / ".llamon/playground/playground.sqlite3"
        compactor = Compactor(store, db.parent, give_back_bytes=1 << 20)
        assert await compactor.sweep() == 6000  # the deltas (the last status stays a row)
        free = (await store.fetch_one("PRAGMA freelist_count"))[0]  # type: ignore[index]
        assert free > 1000  # the rows' pages, free in the file
        size = db.stat().st_size
        await compactor.give_back()
        assert (await store.fetch_one("PRAGMA freelist_count"))[0] == 0  # type: ignore[index]
        await store.write(lambda conn: None)  # the truncating checkpoint has run by now
        assert db.stat().st_size < size / 2
        assert b"".join(await replay(store, "r_big")) == b"".join(before)
        # A few free pages are kept for the next runs' rows.
        await compactor.give_back()
        kept = Compactor(store, db.parent)  # the daemon's threshold: 32 MiB
        await finished_run(store, session["id"], "r_small", 3000)
        await kept.sweep()
        free = (await store.fetch_one("PRAGMA freelist_count"))[0]  # type: ignore[index]
        assert free > 0
        await kept.give_back()
        assert (await store.fetch_one("PRAGMA freelist_count"))[0] == free  # type: ignore[index]
    finally:
        await store.close()
