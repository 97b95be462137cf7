"""The public client (cli/client.py) against the real daemon, as a Studio uses it: create a
run, stream every event to the terminal status, map error answers to its own errors, pick a
stream up after the daemon went away (docs/client.md)."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import aclosing

import pytest

from llamon_playground.cli.client import (
    ActiveRunConflict,
    ApiError,
    ConnectionLost,
    DaemonNotRunning,
    Event,
    PlaygroundClient,
    text_part,
)
from llamon_playground.common.contract import RunStatus
from tests.support.door import running_daemon
from tests.support.procs import Stack


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    yield from running_daemon(tmp_path_factory, "client", {"ECHO_CHUNK_DELAY_MS": "5"})


def attach(stack: Stack) -> PlaygroundClient:
    """How a Studio finds the daemon: from the project folder (and the environment)."""
    return PlaygroundClient.for_project(stack.project, stack.env)


async def all_events(client: PlaygroundClient, run_id: str, after: int | None = None
                     ) -> list[Event]:
    return [event async for event in client.stream(run_id, after=after)]


async def first_output(client: PlaygroundClient, run_id: str) -> None:
    async with aclosing(client.stream(run_id)) as events:
        async for event in events:
            if event.kind == "output.delta":
                return
    raise AssertionError(f"run {run_id} ended before any output")


async def test_create_stream_to_the_end_and_read_back(served: Stack) -> None:
    async with attach(served) as client:
        health = await client.health()
        assert health["status"] == "ok" and health["project"] == str(served.project)
        session = await client.create_session(title="studio")
        accepted = await client.create_run(session["id"], [text_part("stream hi there")],
                                           metadata={"studio": "1"},
                                           changed_files=["app/agent.py"])
        assert accepted["status"] == "queued"
        run_id = accepted["run_id"]
        events = await all_events(client, run_id)
        ids = [event.id for event in events]
        assert None not in ids and ids == sorted(set(ids))  # type: ignore[type-var]
        assert events[0].status is RunStatus.QUEUED
        assert [e for e in events if e.terminal] == [events[-1]]
        assert events[-1].status is RunStatus.COMPLETED
        assert "".join(e.data["text"] for e in events if e.kind == "output.delta") == "hi there"
        run = await client.run(run_id)
        assert run["status"] == "completed" and run["session_id"] == session["id"]
        assert run["input"]["metadata"] == {"studio": "1"}
        assert run["input"]["changed_files"] == ["app/agent.py"]
        assert [r["id"] for r in await client.runs(session["id"])] == [run_id]
        assert session["id"] in [s["id"] for s in await client.sessions()]
        # Replay after a cursor: exactly the events after it, the same ones.
        assert await all_events(client, run_id, after=ids[2]) == events[3:]


async def test_error_answers_raise_the_clients_errors(served: Stack) -> None:
    async with attach(served) as client:
        with pytest.raises(ApiError) as missing:
            await client.run("run_nope")
        assert (missing.value.status, missing.value.code) == (404, "run_not_found")
        assert not isinstance(missing.value, ActiveRunConflict)
        with pytest.raises(ApiError) as no_stream:
            await all_events(client, "run_nope")
        assert (no_stream.value.status, no_stream.value.code) == (404, "run_not_found")
        with pytest.raises(ApiError) as no_session:
            await client.create_run("ses_nope", [text_part("hi")])
        assert (no_session.value.status, no_session.value.code) == (404, "session_not_found")
        session = await client.create_session(title="errors")
        with pytest.raises(ApiError) as invalid:
            await client.create_run(session["id"], [])
        assert (invalid.value.status, invalid.value.code) == (400, "invalid_part")

        slow = (await client.create_run(session["id"], [text_part("slow")]))["run_id"]
        await first_output(client, slow)
        with pytest.raises(ActiveRunConflict) as conflict:
            await client.create_run(session["id"], [text_part("stream no")])
        assert conflict.value.status == 409 and conflict.value.active_run_id == slow
        with pytest.raises(ActiveRunConflict) as host_busy:
            await client.host_control("restart")
        assert host_busy.value.active_run_id == slow
        assert (await client.cancel(slow))["status"] == "cancelled"
        with pytest.raises(ApiError) as not_active:
            await client.cancel(slow)
        assert (not_active.value.status, not_active.value.code) == (409, "run_not_active")
        assert not isinstance(not_active.value, ActiveRunConflict)


async def test_resume_an_input_required_run_and_rerun(served: Stack) -> None:
    async with attach(served) as client:
        session = await client.create_session(title="ask")
        asked = (await client.create_run(session["id"], [text_part("ask")]))["run_id"]
        assert (await all_events(client, asked))[-1].status is RunStatus.INPUT_REQUIRED
        child = (await client.resume(asked, [text_part("Ada")]))["run_id"]
        events = await all_events(client, child)
        assert events[-1].status is RunStatus.COMPLETED
        assert "".join(e.data["text"] for e in events if e.kind == "output.delta") \
            == "Hello, Ada!"
        assert (await client.run(child))["parent_run_id"] == asked
        with pytest.raises(ApiError) as again:
            await client.resume(asked, [text_part("again")])
        assert (again.value.status, again.value.code) == (409, "run_not_resumable")
        rerun = (await client.rerun(asked))["run_id"]
        assert (await all_events(client, rerun))[-1].status is RunStatus.INPUT_REQUIRED
        assert (await client.run(rerun))["rerun_of"] == asked


async def test_the_host_and_the_project_stream_through_the_client(served: Stack) -> None:
    async with attach(served) as client:
        started = await client.host_control("start")
        assert started["state"] == "ready" and (await client.host())["state"] == "ready"
        page = await client.host_logs()
        assert any("echo_agent ready on" in line["text"] for line in page["lines"])
        async with aclosing(client.project_events()) as events:
            snapshot = [await anext(events), await anext(events)]
        assert [e.kind for e in snapshot] == ["host.state", "run.active"]
        assert snapshot[0].data["state"] == "ready" and snapshot[1].data == {"run_id": None}


async def test_a_daemon_killed_mid_stream_is_connection_lost_and_the_stream_resumes(
        daemon: Stack) -> None:
    async with attach(daemon) as client:
        session = await client.create_session(title="kill")
        run_id = (await client.create_run(session["id"], [text_part("slow")]))["run_id"]
        seen: list[Event] = []
        killed = False
        with pytest.raises(ConnectionLost):
            async for event in client.stream(run_id):
                seen.append(event)
                if event.kind == "output.delta" and not killed:
                    assert daemon.daemon is not None
                    daemon.remember_hosts()
                    daemon.daemon.signal(signal.SIGKILL)
                    killed = True
        assert not seen[-1].terminal
    assert daemon.daemon is not None
    daemon.daemon.wait(10)
    async with attach(daemon) as client:
        with pytest.raises(DaemonNotRunning) as gone:
            await client.health()
        assert type(gone.value) is DaemonNotRunning
    daemon.start_daemon()
    async with attach(daemon) as client:
        rest = await all_events(client, run_id, after=seen[-1].id)
        assert rest[-1].status is RunStatus.INTERRUPTED
        assert [e.id for e in seen + rest] == [e.id for e in await all_events(client, run_id)]


async def test_names_edits_and_lineage_through_the_client(served: Stack) -> None:
    async with attach(served) as client:
        session = await client.create_session(title="before")
        renamed = await client.update_session(session["id"], title="after")
        assert renamed["title"] == "after"
        first = (await client.create_run(session["id"], [text_part("stream a b")]))["run_id"]
        await all_events(client, first)
        run = await client.update_run(first, label="base", note="n")
        assert (run["label"], run["note"], run["status"]) == ("base", "n", "completed")
        second = (await client.rerun(first, parts=[text_part("stream c")], label="v2"))["run_id"]
        await all_events(client, second)
        rerun = await client.run(second)
        assert rerun["edited_fields"] == ["parts"] and rerun["label"] == "v2"
        lineage = await client.lineage(second)
        assert lineage["reruns"]["run"]["id"] == first
        assert [n["run"]["id"] for n in lineage["reruns"]["reruns"]] == [second]
        with pytest.raises(ApiError) as refused:
            await client.update_run(first, label="x" * 201)
        assert refused.value.status == 400 and refused.value.code == "invalid_label"
