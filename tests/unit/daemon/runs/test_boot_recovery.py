"""Boot recovery checks the runs added since the last boot and the active one, never every
finished run (its work does not grow with history), and still repairs what an import
added below its mark."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from llamon_playground.common.config import build_settings
from llamon_playground.daemon.runs.reconcile import CANDIDATES_SQL, IMPORTED_ENDING, reconcile_runs
from llamon_playground.daemon.store.blobs import BlobStore
from llamon_playground.daemon.store.bundles import import_bundle
from llamon_playground.daemon.store.database import Store
from llamon_playground.daemon.store.history import create_session, get_run, insert_run

ROW = {"created_at": "2026-01-01T00:00:00Z", "context_id": "c", "input": {"parts": []}}


def make_store(tmp_path: Path) -> Store:
    settings = build_settings(tmp_path, {"LLAMON_PLAYGROUND_RUNTIME_DIR": str(tmp_path / "rt")})
    return Store(settings, on_commit=lambda rows: None)


def ended_without_events(run_id: str) -> dict[str, Any]:
    """A bundle whose run's row ended but whose events never said so."""
    return {"format": "llamon.playground.bundle/1",
            "sessions": [{"id": "s", "title": "t", "created_at": ROW["created_at"]}],
            "runs": [{"id": run_id, "session_id": "s", "status": "completed", **ROW,
                      "output": [{"kind": "text", "text": "hi"}]}],
            "events": [], "blobs": {}}


@asynccontextmanager
async def three_runs_recovered(tmp_path: Path) -> AsyncIterator[Store]:
    """A store of three finished runs, checked by one boot (its mark past them)."""
    store = make_store(tmp_path)
    await store.open()
    try:
        session = await create_session(store, "s", {})
        for n in range(3):
            await insert_run(store, {"id": f"run_{n}", "session_id": session["id"],
                                     "status": "completed", **ROW}, [])
        await reconcile_runs(store, "daemon_restarted")
        yield store
    finally:
        await store.close()


async def test_the_candidates_query_reads_new_and_active_runs_by_index(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    await store.open()
    try:
        conn = sqlite3.connect(tmp_path / ".llamon/playground/playground.sqlite3")
        plan = [row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {CANDIDATES_SQL}",
                                               {"mark": 0})]
        conn.close()
    finally:
        await store.close()
    runs_reads = [step for step in plan if step.startswith(("SCAN r", "SEARCH r"))]
    assert runs_reads == ["SEARCH r USING INTEGER PRIMARY KEY (rowid>?)",
                          "SCAN r USING INDEX one_active_run"], plan


async def test_a_finished_run_is_not_read_again_at_the_next_boot(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    await store.open()
    try:
        session = await create_session(store, "s", {})
        await insert_run(store, {"id": "run_old", "session_id": session["id"],
                                 "status": "completed", **ROW}, [])
        # The first boot finds its events missing and ends its stream from the row.
        assert await reconcile_runs(store, "daemon_restarted") == ["run_old"]
        # Its events taken away behind the daemon's back: a boot that read every finished
        # run would repair it again; this one does not look at it.
        await store.write(lambda conn: conn.execute(
            "DELETE FROM events WHERE run_id = 'run_old'"))
        await insert_run(store, {"id": "run_live", "session_id": session["id"],
                                 "status": "running", **ROW}, [])
        await insert_run(store, {"id": "run_new", "session_id": session["id"],
                                 "status": "failed", **ROW}, [])
        assert sorted(await reconcile_runs(store, "daemon_restarted")) == ["run_live",
                                                                          "run_new"]
        assert await reconcile_runs(store, "daemon_restarted") == []
    finally:
        await store.close()


async def test_an_active_run_below_the_mark_is_still_recovered(tmp_path: Path) -> None:
    async with three_runs_recovered(tmp_path) as store:
        # An old run's row active again while its events say it ended (a row that missed
        # its ending): the row takes the ending from the events.
        await store.write(lambda conn: conn.execute(
            "UPDATE runs SET status = 'running' WHERE id = 'run_0'"))
        assert await reconcile_runs(store, "daemon_restarted") == ["run_0"]
        row = await store.fetch_one("SELECT status FROM runs WHERE id = 'run_0'")
        assert row is not None and row["status"] == "completed"


async def test_an_import_below_the_mark_is_checked_at_the_next_boot(tmp_path: Path) -> None:
    async with three_runs_recovered(tmp_path) as store:
        # The newest runs deleted: the import's rows take their rowids again, at or below
        # the mark the last boot left.
        await store.write(lambda conn: conn.execute(
            "DELETE FROM runs WHERE id IN ('run_1', 'run_2')"))
        ids = await import_bundle(store, BlobStore(tmp_path / "files"),
                                  ended_without_events("x"), IMPORTED_ENDING)
        new_id = ids["runs"]["x"]
        row = await store.fetch_one("SELECT rowid FROM runs WHERE id = ?", (new_id,))
        assert row is not None and row[0] == 2
        assert await reconcile_runs(store, "daemon_restarted") == [new_id]
        last = await store.fetch_one(
            "SELECT kind FROM events WHERE run_id = ? ORDER BY seq DESC LIMIT 1", (new_id,))
        assert last is not None and last["kind"] == "run.status"


async def test_a_run_a_clean_stop_left_unended_ends_as_a_clean_stop(tmp_path: Path) -> None:
    """A run found active that the stopping daemon noted (it could not write its ending)
    ends studio_shutdown, one it did not daemon_restarted; each error says which."""
    store = make_store(tmp_path)
    await store.open()
    try:
        session = await create_session(store, "s", {})
        for run_id in ("run_stopped", "run_killed"):  # one daemon's life each
            await insert_run(store, {"id": run_id, "session_id": session["id"],
                                     "status": "running", **ROW}, [])
            await reconcile_runs(store, "daemon_restarted", frozenset({"run_stopped"}))
        stopped = await get_run(store, "run_stopped")
        killed = await get_run(store, "run_killed")
    finally:
        await store.close()
    assert stopped is not None and killed is not None
    assert (stopped["status"], stopped["reason"]) == ("interrupted", "studio_shutdown")
    assert (killed["status"], killed["reason"]) == ("interrupted", "daemon_restarted")
    assert "took no writes" in stopped["error"]["message"]
    assert "killed or crashed" in killed["error"]["message"]


async def test_a_run_active_in_an_imported_bundle_says_so(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    await store.open()
    try:
        active = ended_without_events("x")
        active["runs"][0]["status"] = "running"
        ids = await import_bundle(store, BlobStore(tmp_path / "files"), active, IMPORTED_ENDING)
        run = await get_run(store, ids["runs"]["x"])
    finally:
        await store.close()
    assert run is not None and (run["status"], run["reason"]) == ("interrupted", "imported")
    assert run["error"] == {"kind": "error", "message": "the run was still active in the "
                            "bundle it was imported from"}
