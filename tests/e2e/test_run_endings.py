"""How runs end, seen by a client of the real daemon and Host: a visible terminal status
comes with the whole final record and a free lock, every phase that started closes, and
what was streamed is what is stored."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.api import TERMINAL, Api, SseEvent
from tests.support.endings import assert_phases_close, folded_text, stored_text
from tests.support.procs import Stack
from tests.support.waiting import eventually

ROUNDS = 8


async def poll_until_terminal(api: Api, run_id: str, timeout: float = 60.0) -> dict[str, Any]:
    """A client with no SSE: GET the run back to back until its status is terminal."""
    run: dict[str, Any] = await eventually(lambda: api.run(run_id),
                                           lambda r: r["status"] in TERMINAL,
                                           f"run {run_id} to end", timeout, interval=0)
    return run


# The parametrised tests share the module's daemon, each in a session of its own; the
# phases test has its own (it breaks the project's code).
@pytest.mark.parametrize("text", ["stream a b c", "fail"])
async def test_a_visible_terminal_status_comes_with_the_record_and_a_free_lock(
        module_api: Api, text: str) -> None:
    api = module_api
    session = await api.session()
    run_id = await api.start_run(session, text)
    for _ in range(ROUNDS):
        run = await poll_until_terminal(api, run_id)
        assert run["ended_at"] is not None and run["output"], run
        if run["status"] == "failed":
            assert run["reason"] == "host_error" and run["error"]["message"]
        # The next run starts at once: no 409 naming the run just seen ended.
        code, doc = await api.call("POST", f"sessions/{session}/runs",
                                   {"parts": [{"kind": "text", "text": text}]})
        assert code == 202, doc
        events = await api.events(run_id)
        assert events[-1].data["status"] == run["status"]
        run_id = doc["run_id"]
    await api.wait_status(run_id)


def phases(events: list[SseEvent]) -> list[dict[str, Any]]:
    return [e.data for e in events if e.event == "run.phase"]


async def ended(api: Api, run_id: str) -> tuple[dict[str, Any], list[SseEvent]]:
    run = await api.wait_status(run_id)
    return run, await api.events(run_id)


async def test_every_phase_that_started_ends(api: Api, daemon: Stack) -> None:
    session = await api.session()
    (daemon.project / "app" / "broken.py").write_text("def f(:\n    pass\n")
    run, events = await ended(api, await api.start_run(session, "stream x",
                                                       changed_files=["app/broken.py"]))
    assert run["reason"] == "project_validation"
    assert_phases_close(phases(events))
    [validate] = [p for p in phases(events) if p["phase"] == "validate" and
                  p["state"] != "started"]
    assert validate["state"] == "failed" and validate["reason"] == "project_validation"
    assert "app/broken.py" in validate["message"]

    for text, reason, state in (("fail", "host_error", "failed"),
                                ("crash", "host_exited", "failed")):
        run, events = await ended(api, await api.start_run(session, text))
        assert run["reason"] == reason
        assert_phases_close(phases(events))
        [send] = [p for p in phases(events) if p["phase"] == "send" and p["state"] != "started"]
        assert (send["state"], send["reason"]) == (state, reason) and send["message"]

    run_id = await api.start_run(session, "slow")
    await api.first_output(run_id)
    await api.ok("DELETE", f"runs/{run_id}")
    run, events = await ended(api, run_id)
    assert run["reason"] == "user_cancelled"
    assert_phases_close(phases(events))
    [send] = [p for p in phases(events) if p["phase"] == "send" and p["state"] != "started"]
    assert (send["state"], send["reason"]) == ("cancelled", "user_cancelled")


@pytest.mark.parametrize("text,status", [("stream one two three four", "completed"),
                                         ("replace", "completed"),
                                         ("slow", "cancelled"),
                                         ("fail", "failed"),
                                         ("crash", "failed")])
async def test_what_was_streamed_is_what_is_stored(module_api: Api, text: str,
                                                   status: str) -> None:
    api = module_api
    session = await api.session()
    run_id = await api.start_run(session, text)
    if status == "cancelled":
        seen = 0
        async for event in api.stream(run_id):
            seen += event.event == "output.delta"
            if seen == 3:
                break
        await api.ok("DELETE", f"runs/{run_id}")
    run, events = await ended(api, run_id)
    assert run["status"] == status
    deltas = [e.data for e in events if e.event == "output.delta"]
    assert deltas and all(isinstance(d["append"], bool) for d in deltas)
    assert folded_text(deltas) == stored_text(run["output"]) != ""
    [final] = [e.data["parts"] for e in events if e.event == "run.output"]
    assert final == run["output"]
    if text == "replace":
        assert stored_text(run["output"]) == "n4 "
        assert [d["append"] for d in deltas] == [False] * 5
