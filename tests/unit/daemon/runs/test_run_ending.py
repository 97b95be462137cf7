"""A run's ending on a real SQLite store: one transaction for the row and its closing
events, the lock released at that commit, writes kept through an outage, boot recovery
that makes every run's row and events agree, and deltas that fold into the stored output."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from llamon_playground.common.config import build_settings
from llamon_playground.daemon.a2a.wire import A2AEvent, WirePart
from llamon_playground.daemon.data.parts import RunRequest
from llamon_playground.daemon.runs.active import ActiveRun
from llamon_playground.daemon.runs.ending import RunFailure
from llamon_playground.daemon.runs.journal import RunJournal
from llamon_playground.daemon.runs.output import OutputCollector
from llamon_playground.daemon.runs.reconcile import reconcile_runs
from llamon_playground.daemon.runs.state import Reason, RunStatus
from llamon_playground.daemon.store.blobs import BlobStore
from llamon_playground.daemon.store.database import Store
from llamon_playground.daemon.store.frames import STATUS_SQL, frame_payload
from llamon_playground.daemon.store.history import (
    create_session,
    get_run,
    insert_run,
    scores_op,
)
from tests.support.endings import assert_phases_close, folded_text
from tests.support.waiting import eventually

TERMINAL = ("completed", "failed", "cancelled", "interrupted", "input_required")


class CommitWatch(Store):
    """Records, right after every commit, what a reader would see of each run: the row's
    status and final fields, and the status of its last run.status event. Each commit is
    a point where a SIGKILL could land; none may show a half-ended run."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.seen: list[tuple[str, str | None, str | None, str]] = []

    def _commit_on_thread(self, batch: Any, ts: str) -> Any:
        result = super()._commit_on_thread(batch, ts)
        assert self._conn is not None
        for run_id, status, ended_at, output in self._conn.execute(
                "SELECT id, status, ended_at, output FROM runs").fetchall():
            last = self._conn.execute(
                f"SELECT {STATUS_SQL} FROM events "
                "WHERE run_id = ? AND kind = 'run.status' ORDER BY seq DESC LIMIT 1",
                (run_id,)).fetchone()
            self.seen.append((status, ended_at, last[0] if last else None, output))
        return result


def db_path(tmp_path: Path) -> str:
    return str(tmp_path / ".llamon/playground/playground.sqlite3")


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[CommitWatch]:
    settings = build_settings(tmp_path, {"LLAMON_PLAYGROUND_RUNTIME_DIR": str(tmp_path / "rt"),
                                         "LLAMON_PLAYGROUND_DB_BUSY_TIMEOUT_MS": "20"})
    store = CommitWatch(settings)
    await store.open()
    try:
        yield store
    finally:
        await store.close()


async def new_run(store: Store, journal: RunJournal, released: list[str],
                  run_id: str = "run_1") -> ActiveRun:
    session = await create_session(store, "s", {})
    await insert_run(store, {"id": run_id, "session_id": session["id"], "status": "queued",
                             "created_at": "now", "context_id": "ctx",
                             "input": {"parts": []}}, [])
    return ActiveRun(run_id, session["id"], "ctx", RunRequest(parts=[]), journal=journal,
                     on_end=lambda run: released.append(run.run_id))


def streamed(*texts: str) -> OutputCollector:
    collected = OutputCollector()
    for i, text in enumerate(texts):
        collected.add(A2AEvent("artifact", artifact_id="a", append=i > 0,
                               parts=[WirePart("text", text=text)]))
    return collected


async def kinds_and_payloads(store: Store, run_id: str) -> list[dict[str, Any]]:
    await store.flush()
    return [e.as_dict() for e in await store.events_after(run_id, 0)]


async def test_no_commit_shows_a_half_ended_run_and_the_lock_frees_at_that_commit(
        store: CommitWatch, tmp_path: Path) -> None:
    journal = RunJournal(store, BlobStore(tmp_path / "files"))
    seen_at_release: list[tuple[Any, ...]] = []

    def on_end(run: ActiveRun) -> None:
        # What any other connection sees the instant the lock is free.
        conn = sqlite3.connect(db_path(tmp_path))
        try:
            row = conn.execute("SELECT status, ended_at, output FROM runs WHERE id = ?",
                               (run.run_id,)).fetchone()
            last = conn.execute("SELECT frame FROM events WHERE run_id = ? ORDER BY seq "
                                "DESC LIMIT 1", (run.run_id,)).fetchone()
        finally:
            conn.close()
        seen_at_release.append((*row, frame_payload(last[0])["status"]))

    run = await new_run(store, journal, [])
    run._on_end = on_end
    run.advance(RunStatus.PREPARING)
    run.advance(RunStatus.RUNNING)
    run.collect_into(streamed("n0 ", "n1 "))
    assert await run.end()  # the stream ended: completed
    for status, ended_at, last, output in store.seen:
        assert (status in TERMINAL) == (last in TERMINAL), (status, last)
        if status in TERMINAL:
            assert ended_at is not None and orjson.loads(output) == [
                {"kind": "text", "text": "n0 n1 "}]
    [(status, ended_at, output, last)] = seen_at_release
    assert (status, last) == ("completed", "completed") and ended_at is not None
    assert orjson.loads(output) == [{"kind": "text", "text": "n0 n1 "}]


async def test_an_outage_at_the_end_keeps_the_lock_and_loses_no_row_update(
        store: CommitWatch, tmp_path: Path) -> None:
    """The outage is real: another connection holds SQLite's write lock, so every commit
    fails (busy) until it lets go."""
    journal = RunJournal(store, BlobStore(tmp_path / "files"))
    released: list[str] = []
    run = await new_run(store, journal, released)
    run.advance(RunStatus.PREPARING)
    await store.flush()
    blocker = sqlite3.connect(db_path(tmp_path), isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    try:
        run.advance(RunStatus.RUNNING)  # started_at, written while the disk refuses
        store.submit(scores_op(run.run_id, [{"evaluator": "e", "score": 1.0}]))
        run.collect_into(streamed("partial"))
        ending = asyncio.ensure_future(run.end(RunFailure(Reason.HOST_ERROR, "boom")))
        failures = store.write_failures
        await eventually(lambda: store.write_failures,
                         lambda n: n >= failures + 3, "several failed commits")
        assert released == [] and not ending.done()
        row = await get_run(store, run.run_id)
        assert row is not None and row["status"] == "preparing"
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert await ending
    assert released == [run.run_id]
    row = await get_run(store, run.run_id)
    assert row is not None
    assert (row["status"], row["reason"]) == ("failed", "host_error")
    assert row["started_at"] is not None and row["ended_at"] is not None
    assert row["scores"] == [{"evaluator": "e", "score": 1.0}]
    assert row["output"][0] == {"kind": "text", "text": "partial"}
    statuses = [e["status"] for e in await kinds_and_payloads(store, run.run_id)
                if e["kind"] == "run.status"]
    assert statuses == ["preparing", "running", "failed"]


async def test_every_started_phase_closes_and_the_failing_one_says_why(
        store: CommitWatch, tmp_path: Path) -> None:
    journal = RunJournal(store, BlobStore(tmp_path / "files"))
    run = await new_run(store, journal, [])
    run.advance(RunStatus.PREPARING)
    journal.phase(run.run_id, "validate", "started")
    journal.phase(run.run_id, "validate", "completed")
    journal.phase(run.run_id, "start", "started")
    journal.phase(run.run_id, "ready", "started")
    await run.end(RunFailure(Reason.RUNTIME_UNAVAILABLE, "the Host never got ready"))
    phases = [e for e in await kinds_and_payloads(store, run.run_id) if e["kind"] == "run.phase"]
    assert_phases_close(phases)
    closing = {(e["phase"], e["state"]): e for e in phases if e["state"] != "started"}
    assert closing[("ready", "failed")]["message"] == "the Host never got ready"
    assert closing[("ready", "failed")]["reason"] == "runtime_unavailable"
    assert closing[("start", "failed")]["reason"] == "runtime_unavailable"


@pytest.mark.parametrize("shape", ["stream", "replace", "replace_with_data"])
def test_deltas_fold_into_the_stored_text(shape: str) -> None:
    collected = OutputCollector()
    deltas: list[dict[str, Any]] = []
    for n in range(5):
        parts = [WirePart("text", text=f"n{n} ")]
        if shape == "replace_with_data" and n == 4:
            parts = [WirePart("data", data={"n": n})]
        event = A2AEvent("artifact", artifact_id="a", append=shape == "stream" and n > 0,
                         parts=parts)
        deltas += [{"text": t, "artifact_id": "a", "append": a} for t, a in collected.add(event)]
    stored = "".join(p.text or "" for p in collected.wire_parts() if p.kind == "text")
    assert folded_text(deltas) == stored
    assert stored == {"stream": "n0 n1 n2 n3 n4 ", "replace": "n4 ", "replace_with_data": ""}[
        shape]


async def test_boot_recovery_makes_every_row_and_its_events_agree(
        store: CommitWatch, tmp_path: Path) -> None:
    session = await create_session(store, "s", {})
    base = {"session_id": session["id"], "created_at": "now", "context_id": "c",
            "input": {"parts": []}}

    async def add_events(*events: tuple[str, str, dict[str, Any]]) -> None:
        def op(conn: sqlite3.Connection) -> None:
            rows = [(r, k, orjson.dumps(p)) for r, k, p in events]
            store.batches.insert_events(conn, rows, "ts")
        await store.write(op)

    # A: the row ended, its events never did (a kill between two commits, before).
    await insert_run(store, {"id": "run_a", **base, "status": "completed", "ended_at": "t",
                             "output": [{"kind": "text", "text": "done"}]}, [])
    # B: the events ended, the row did not.
    await insert_run(store, {"id": "run_b", **base, "status": "running"}, [])
    await add_events(("run_a", "run.status", {"status": "running"}),
                     ("run_a", "run.phase", {"phase": "send", "state": "started"}),
                     ("run_b", "run.status", {"status": "running"}),
                     ("run_b", "run.output", {"parts": [{"kind": "text", "text": "x"}]}),
                     ("run_b", "run.status", {"status": "failed", "reason": "host_error"}))
    assert sorted(await reconcile_runs(store, Reason.DAEMON_RESTARTED)) == ["run_a", "run_b"]
    # C: both still active (the daemon died mid-stream), with streamed text, a phase open.
    await insert_run(store, {"id": "run_c", **base, "status": "running"}, [])
    await add_events(
        ("run_c", "run.status", {"status": "running"}),
        ("run_c", "run.phase", {"phase": "send", "state": "started"}),
        ("run_c", "output.delta", {"text": "n0 ", "artifact_id": "a", "append": False}),
        ("run_c", "output.delta", {"text": "n1 ", "artifact_id": "a", "append": True}))
    assert await reconcile_runs(store, Reason.DAEMON_RESTARTED) == ["run_c"]
    assert await reconcile_runs(store, Reason.DAEMON_RESTARTED) == []
    a, b, c = [await get_run(store, r) for r in ("run_a", "run_b", "run_c")]
    assert a is not None and b is not None and c is not None
    a_events = await kinds_and_payloads(store, "run_a")
    assert a_events[-1]["kind"] == "run.status" and a_events[-1]["status"] == "completed"
    assert [e["parts"] for e in a_events if e["kind"] == "run.output"] == [a["output"]]
    assert_phases_close([e for e in a_events if e["kind"] == "run.phase"
                         and e["phase"] != "complete"])
    assert (b["status"], b["reason"], b["output"]) == (
        "failed", "host_error", [{"kind": "text", "text": "x"}])
    assert b["ended_at"] is not None
    assert (c["status"], c["reason"]) == ("interrupted", "daemon_restarted")
    # What it streamed is kept, then the part that says what interrupted it.
    assert c["error"] is not None and "killed or crashed" in c["error"]["message"]
    assert c["output"] == [{"kind": "text", "text": "n0 n1 "}, c["error"]]
    c_events = await kinds_and_payloads(store, "run_c")
    assert c_events[-1]["status"] == "interrupted"
    c_phases = [e for e in c_events if e["kind"] == "run.phase"]
    assert_phases_close([e for e in c_phases if e["phase"] != "complete"])
    # Its open phase and its complete phase end as the run did, never `completed`.
    ends = {e["phase"]: e for e in c_phases if e["state"] != "started"}
    assert ends["send"]["state"] == ends["complete"]["state"] == "interrupted"
    assert ends["complete"]["message"] == c["error"]["message"]
