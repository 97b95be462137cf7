"""Deletion: a session with its orphan blobs, and all history at once."""

from __future__ import annotations

import sqlite3

from tests.e2e.data_support import blob_names, db_rows, finished_run, inline_file, sha, text
from tests.support.api import Api
from tests.support.procs import Stack
from tests.support.waiting import eventually


def db_count(stack: Stack, sql: str) -> int:
    conn = sqlite3.connect(f"{stack.settings.db_path.as_uri()}?mode=ro", uri=True)
    try:
        return int(conn.execute(sql).fetchone()[0])
    finally:
        conn.close()


def stored_events(stack: Stack) -> int:
    """Every stored event: a live run's rows, a finished run's blocks and terminal row."""
    conn = sqlite3.connect(f"{stack.settings.db_path.as_uri()}?mode=ro", uri=True)
    try:
        return int(conn.execute("SELECT (SELECT COUNT(*) FROM events) + "
                                "(SELECT COALESCE(sum(events), 0) FROM event_blocks)"
                                ).fetchone()[0])
    finally:
        conn.close()


async def test_deleting_a_session_removes_its_orphan_blobs_and_keeps_shared_ones(
        api: Api, daemon: Stack) -> None:
    shared, own, other = b"shared by both sessions", b"only the first session", b"second"
    first, second = await api.session(), await api.session()
    await finished_run(api, first, [text("stream one"), inline_file(shared), inline_file(own)])
    await finished_run(api, first, [text("data")])  # a Host output file, only here
    kept = await finished_run(api, second, [text("stream two"), inline_file(shared),
                                            inline_file(other)])
    hello = sha(b"hello from echo_agent\n")
    files = daemon.settings.files_dir
    assert blob_names(files) == {sha(shared), sha(own), sha(other), hello}

    done = await api.ok("DELETE", f"sessions/{first}")
    assert done["blobs_removed"] == 2
    assert blob_names(files) == {sha(shared), sha(other)}
    async with api.http.get(f"/api/playground/v1/files/{sha(shared)}") as resp:
        assert resp.status == 200 and await resp.read() == shared
    rows = db_rows(daemon)
    assert [r[0] for r in rows["sessions"]] == [second]
    assert [r[0] for r in rows["runs"]] == [kept["id"]]
    assert {r[1] for r in rows["events"]} == {kept["id"]}


async def test_delete_all_history_refuses_while_a_run_is_active_then_removes_everything(
        api: Api, daemon: Stack) -> None:
    first, second = await api.session(), await api.session()
    await finished_run(api, first, [text("stream one"), inline_file(b"a file")])
    await finished_run(api, second, [text("data")])
    active = await api.start_run(second, "slow")
    before = db_rows(daemon)
    code, doc = await api.call("DELETE", "sessions")
    assert code == 409 and doc["detail"] == {**doc["detail"], "error": "active_run_conflict",
                                             "active_run_id": active}
    await api.ok("DELETE", f"runs/{active}")
    await api.wait_status(active)
    after_cancel = db_rows(daemon)
    assert after_cancel["sessions"] == before["sessions"]  # the refusal deleted nothing

    events = stored_events(daemon)  # rows and compacted blocks alike
    done = await api.ok("DELETE", "sessions")
    assert done["deleted"] == {"sessions": 2, "runs": 3, "events": events, "suites": 0}
    assert done["blobs_removed"] == 2
    assert db_rows(daemon) == {"sessions": [], "runs": [], "events": [], "run_files": []}
    assert blob_names(daemon.settings.files_dir) == set()
    assert (await api.ok("GET", "sessions"))["sessions"] == []
    # History starts again from empty, and a finished run is compacted as before: SQLite
    # numbers it 1 again, below the compactor's mark, which the deletion brought down.
    session = await api.session()
    fresh = await finished_run(api, session, [text("stream fresh")])
    assert fresh["status"] == "completed"
    await eventually(lambda: db_count(daemon, "SELECT COUNT(*) FROM event_blocks"),
                     lambda n: n > 0, what="the new run compacted")
