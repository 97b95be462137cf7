"""Deleting all of a large history on the real daemon: it goes a step at a time, so other
requests (writes too) are answered while it runs, and a SIGKILL in the middle leaves every
session it had not reached whole and nothing half deleted."""

from __future__ import annotations

import asyncio
import signal
import sqlite3
from pathlib import Path
from typing import Any

from tests.e2e.data_support import blob_names, post_big
from tests.support.api import Api
from tests.support.history_bundles import many_sessions
from tests.support.procs import Stack, stack_for
from tests.support.waiting import eventually

SESSIONS = 2000
RUNS = 4
EVENTS = SESSIONS * RUNS * 4  # three deltas and the terminal status each


def count(stack: Stack, sql: str) -> int:
    conn = sqlite3.connect(f"{stack.settings.db_path.as_uri()}?mode=ro", uri=True)
    try:
        return int(conn.execute(sql).fetchone()[0])
    finally:
        conn.close()


def sessions_left(stack: Stack) -> int:
    return count(stack, "SELECT COUNT(*) FROM sessions")


async def import_many(api: Api) -> None:
    code, doc = await post_big(api, "bundles/import", many_sessions(SESSIONS, RUNS))
    assert code == 201, doc


async def test_delete_all_of_many_sessions_answers_other_requests_while_it_runs(
        api: Api, daemon: Stack) -> None:
    await import_many(api)
    deleting = asyncio.create_task(api.call("DELETE", "sessions"))
    await eventually(lambda: sessions_left(daemon), lambda n: n < SESSIONS,
                     what="the deletion under way", interval=0.002)
    # A write and /health, asked now, are answered between two steps of the deletion.
    made = await api.session()
    async with api.http.get("/health") as resp:
        assert resp.status == 200
    assert 0 < count(daemon, f"SELECT COUNT(*) FROM sessions WHERE id != '{made}'") < SESSIONS
    assert not deleting.done()
    code, done = await deleting
    assert code == 200, done
    assert done == {"deleted": {"sessions": SESSIONS, "runs": SESSIONS * RUNS,
                                "events": EVENTS, "suites": 0}, "blobs_removed": 1}
    # The session made meanwhile stays; nothing else does, and the space went back.
    assert [s["id"] for s in (await api.ok("GET", "sessions"))["sessions"]] == [made]
    for table in ("runs", "events", "event_blocks", "run_files", "run_search"):
        assert count(daemon, f"SELECT COUNT(*) FROM {table}") == 0, table
    assert blob_names(daemon.settings.files_dir) == set()
    assert count(daemon, "PRAGMA freelist_count") == 0


def content(bundle: dict[str, Any], sessions: set[str]) -> dict[str, Any]:
    runs = [r for r in bundle["runs"] if r["session_id"] in sessions]
    ids = {r["id"] for r in runs}
    return {"sessions": [s for s in bundle["sessions"] if s["id"] in sessions], "runs": runs,
            "events": [e for e in bundle["events"] if e["run_id"] in ids]}


async def test_a_sigkill_during_delete_all_loses_nothing_it_had_not_deleted(
        project: Path, runtime_base: Path) -> None:
    with stack_for(project, runtime_base) as stack:
        stack.start_daemon()
        api = Api.for_socket(str(stack.settings.socket_path))
        try:
            await import_many(api)
            before = await api.ok("POST", "bundles/export", {})
            deleting = asyncio.create_task(api.call("DELETE", "sessions"))
            await eventually(lambda: sessions_left(stack), lambda n: n < SESSIONS - 100,
                             what="the deletion under way", interval=0.002)
            assert stack.daemon is not None
            stack.daemon.signal(signal.SIGKILL)
            stack.daemon.wait(10)
            await asyncio.gather(deleting, return_exceptions=True)  # its connection broke
        finally:
            await api.close()
        stack.start_daemon()
        api = Api.for_socket(str(stack.settings.socket_path))
        try:
            after = await api.ok("POST", "bundles/export", {})
            kept = {s["id"] for s in after["sessions"]}
            assert 0 < len(kept) < SESSIONS - 100
            # Every session it had not reached is there whole, as it was: its runs, their
            # events, the file they name.
            assert content(after, kept) == content(before, kept)
            assert len(after["runs"]) == len(kept) * RUNS
            assert blob_names(stack.settings.files_dir) == set(before["blobs"])
            # Nothing half deleted: no run without its session, nothing without its run.
            for sql in (("SELECT COUNT(*) FROM runs WHERE session_id NOT IN "
                        "(SELECT id FROM sessions)"),
                        "SELECT COUNT(*) FROM events WHERE run_id NOT IN (SELECT id FROM runs)",
                        ("SELECT COUNT(*) FROM event_blocks WHERE run_id NOT IN "
                        "(SELECT id FROM runs)"),
                        ("SELECT COUNT(*) FROM run_files WHERE run_id NOT IN "
                        "(SELECT id FROM runs)"),
                        ("SELECT COUNT(*) FROM run_search WHERE rowid NOT IN "
                        "(SELECT rowid FROM runs)")):
                assert count(stack, sql) == 0, sql
            # Asked again, it deletes the rest.
            done = await api.ok("DELETE", "sessions")
            assert done["deleted"]["sessions"] == len(kept)
            assert done["deleted"]["runs"] == len(kept) * RUNS
            assert done["blobs_removed"] == 1
            assert (await api.ok("GET", "sessions"))["sessions"] == []
            assert blob_names(stack.settings.files_dir) == set()
        finally:
            await api.close()
