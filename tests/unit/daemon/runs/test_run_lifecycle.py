"""The run object without processes: its task, stop(reason) and the one end(), written
through a real journal into a real SQLite store."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from llamon_playground.common.config import build_settings
from llamon_playground.daemon.a2a.wire import A2AEvent, WirePart
from llamon_playground.daemon.data.parts import RunRequest
from llamon_playground.daemon.runs.active import ActiveRun
from llamon_playground.daemon.runs.ending import RunFailure
from llamon_playground.daemon.runs.journal import RunJournal
from llamon_playground.daemon.runs.output import OutputCollector
from llamon_playground.daemon.runs.state import IllegalTransition, Reason, RunLife, RunStatus
from llamon_playground.daemon.store.blobs import BlobStore
from llamon_playground.daemon.store.database import Store
from llamon_playground.daemon.store.history import create_session, get_run, insert_run


@dataclass
class Bench:
    store: Store
    journal: RunJournal
    session_id: str
    released: list[str]
    count: int = 0

    async def run(self, changed_files: list[str] | None = None) -> ActiveRun:
        """A run as the manager makes one: its queued row exists, its task not yet."""
        self.count += 1
        run_id = f"run_{self.count}"
        await insert_run(self.store, {
            "id": run_id, "session_id": self.session_id, "status": "queued",
            "created_at": "now", "context_id": "ctx", "input": {"parts": []}}, [])
        return ActiveRun(run_id, self.session_id, "ctx",
                         RunRequest(parts=[], changed_files=changed_files or []),
                         journal=self.journal, on_end=lambda run: self.released.append(run.run_id))

    async def row(self, run: ActiveRun) -> dict[str, Any]:
        row = await get_run(self.store, run.run_id)
        assert row is not None
        return row

    async def statuses(self, run: ActiveRun) -> list[dict[str, Any]]:
        await self.store.flush()
        return [{k: v for k, v in e.as_dict().items() if k not in ("seq", "run_id", "kind")}
                for e in await self.store.events_after(run.run_id, 0) if e.kind == "run.status"]


@pytest.fixture
async def bench(tmp_path: Path) -> AsyncIterator[Bench]:
    settings = build_settings(tmp_path, {"LLAMON_PLAYGROUND_RUNTIME_DIR": str(tmp_path / "rt")})
    store = Store(settings)
    await store.open()
    try:
        session = await create_session(store, "s", {})
        yield Bench(store, RunJournal(store, BlobStore(settings.files_dir)), session["id"], [])
    finally:
        await store.close()


def _said(text: str) -> OutputCollector:
    collected = OutputCollector()
    collected.add(A2AEvent("message", parts=[WirePart("text", text=text)]))
    return collected


async def test_a_run_ends_once_and_releases_once(bench: Bench) -> None:
    run = await bench.run()
    run.advance(RunStatus.PREPARING)
    run.advance(RunStatus.RUNNING)
    run.collect_into(_said("hi"))
    assert await run.end()  # the stream ended: its last task state decides
    assert not await run.end(RunFailure(Reason.HOST_ERROR, "too late"))
    assert run.life is RunLife.ENDED and run.status is RunStatus.COMPLETED
    assert bench.released == [run.run_id]
    row = await bench.row(run)
    assert (row["status"], row["reason"], row["error"]) == ("completed", None, None)
    assert row["output"] == [{"kind": "text", "text": "hi"}]
    assert [e["status"] for e in await bench.statuses(run)] == [
        "preparing", "running", "completed"]


async def test_a_stopped_run_ends_for_the_stop_reason(bench: Bench) -> None:
    run = await bench.run()
    run.advance(RunStatus.PREPARING)
    run.stop(Reason.RUNTIME_RESTARTED)
    assert run.life is RunLife.STOPPING
    # Whatever the task says afterwards, the stop decided the ending; its output is kept.
    run.collect_into(_said("partial"))
    assert await run.end()
    assert run.ending is not None and run.ending.reason == Reason.RUNTIME_RESTARTED
    row = await bench.row(run)
    assert (row["status"], row["reason"]) == ("failed", "runtime_restarted")
    assert row["output"] == [{"kind": "text", "text": "partial"}]
    assert (await bench.statuses(run))[-1] == {
        "status": "failed", "previous": "preparing", "reason": "runtime_restarted"}


async def test_the_first_stop_wins_and_a_stop_after_the_end_does_nothing(bench: Bench) -> None:
    run = await bench.run()
    run.stop(Reason.USER_CANCELLED)
    run.stop(Reason.STUDIO_SHUTDOWN)
    assert run.stop_reason == Reason.USER_CANCELLED
    await run.wait_stopped(0)
    assert (await bench.row(run))["status"] == "cancelled"

    ended = await bench.run()
    await ended.end()
    ended.stop(Reason.USER_CANCELLED)
    assert ended.stop_reason is None and ended.life is RunLife.ENDED


async def test_stop_before_the_first_step_is_ended_by_the_stopper(bench: Bench) -> None:
    run = await bench.run()
    entered: list[str] = []

    async def body() -> None:
        entered.append("ran")

    task = run.start(body())
    run.stop(Reason.USER_CANCELLED)  # before the loop ever ran the task
    await run.wait_stopped(10)
    assert task.cancelled() and entered == []
    row = await bench.row(run)
    assert (row["status"], row["reason"]) == ("cancelled", "user_cancelled")
    assert bench.released == [run.run_id]


async def test_a_task_ending_its_own_stop_is_not_ended_twice(bench: Bench) -> None:
    run = await bench.run()
    inside = asyncio.Event()

    async def body() -> None:  # the executor's shape: the cancel path writes the ending
        run.advance(RunStatus.PREPARING)
        try:
            inside.set()
            await asyncio.Event().wait()
        except asyncio.CancelledError as cancelled:
            await run.end(cancelled)
            raise

    task = run.start(body())
    await inside.wait()
    run.stop(Reason.USER_CANCELLED)
    await run.wait_stopped(10)
    assert task.done()
    assert [e["status"] for e in await bench.statuses(run)] == ["preparing", "cancelled"]
    assert bench.released == [run.run_id]


async def test_a_stuck_task_is_ended_by_the_stopper_and_its_late_end_is_a_no_op(
        bench: Bench) -> None:
    run = await bench.run()
    inside, unstick = asyncio.Event(), asyncio.Event()
    late: list[bool] = []

    async def body() -> None:
        try:
            inside.set()
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            await unstick.wait()  # a cleanup that hangs past the stopper's patience
            late.append(await run.end(RunFailure(Reason.HOST_ERROR, "late")))

    task = run.start(body())
    await inside.wait()
    run.stop(Reason.USER_CANCELLED)
    await run.wait_stopped(0.01)  # expires for sure: the task waits on `unstick`
    assert run.life is RunLife.ENDED
    unstick.set()
    await task
    assert late == [False]
    assert (await bench.row(run))["reason"] == "user_cancelled"


async def test_advance_refuses_endings_and_illegal_moves(bench: Bench) -> None:
    run = await bench.run()
    with pytest.raises(IllegalTransition):
        run.advance(RunStatus.COMPLETED)  # endings go through end()
    with pytest.raises(IllegalTransition):
        run.advance(RunStatus.RUNNING)  # queued → running skips preparing
    assert run.status is RunStatus.QUEUED
    run.start(asyncio.sleep(0))
    with pytest.raises(IllegalTransition):
        run.start(asyncio.sleep(0))
    assert run.task is not None
    await run.task


async def test_a_change_is_the_runs_own_save_only_before_its_host_step(bench: Bench) -> None:
    run = await bench.run(changed_files=["graph.py", "nodes.py"])
    assert run.owns_change({"graph.py"})
    assert not run.owns_change({"graph.py", "other.py"})
    run.host_checked()
    assert run.life is RunLife.HOST_CHECKED and not run.owns_change({"graph.py"})
    await run.end()

    stopped = await bench.run(changed_files=["graph.py"])
    stopped.stop(Reason.USER_CANCELLED)
    stopped.host_checked()  # a stopping run stays stopping
    assert stopped.life is RunLife.STOPPING and not stopped.owns_change({"graph.py"})
    await stopped.wait_stopped(0)


async def test_an_outside_edit_is_waited_for_until_the_restart_phase_looked(
        bench: Bench) -> None:
    run = await bench.run(changed_files=["graph.py"])
    assert run.awaits_edits()  # not sent yet: its restart phase will wait for the edit
    run.edits_checked()
    assert not run.awaits_edits() and run.owns_change({"graph.py"})  # its own save still is
    await run.end()

    stopped = await bench.run()
    stopped.stop(Reason.USER_CANCELLED)
    assert not stopped.awaits_edits()
    await stopped.wait_stopped(0)


async def test_an_error_outcome_keeps_its_detail(bench: Bench) -> None:
    run = await bench.run()
    run.advance(RunStatus.PREPARING)
    await run.end(RunFailure(Reason.PROJECT_VALIDATION, "bad", file="a.py", line=3,
                             recommended_run_command="llamon run"))
    row = await bench.row(run)
    assert row["error"] == {"kind": "error", "message": "bad", "file": "a.py", "line": 3}
    assert row["recommended_run_command"] == "llamon run"
    assert row["output"] == [{"kind": "error", "message": "bad"}]
