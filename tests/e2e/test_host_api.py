"""Host status, control, logs and the project-wide event stream over the API."""

from __future__ import annotations

import asyncio

import aiohttp

from llamon_playground.common.contract import API_PREFIX
from tests.support.api import Api, parse_sse
from tests.support.procs import Stack
from tests.support.waiting import eventually

P = API_PREFIX


async def test_host_control_and_logs(api: Api) -> None:
    assert (await api.ok("GET", "host"))["state"] == "stopped"
    started = await api.ok("POST", "host/start")
    assert started["state"] == "ready" and started["generation"] == 1 and started["pid"]
    logs = await api.ok("GET", "host/logs")
    ready = [ln for ln in logs["lines"] if "echo_agent ready on" in ln["text"]]
    assert ready and ready[0]["generation"] == 1 and ready[0]["stream"] == "stdout"
    assert logs["overflow"] is False
    page = await api.ok("GET", f"host/logs?after={logs['next']}&limit=10")
    assert page["lines"] == []
    restarted = await api.ok("POST", "host/restart")
    assert restarted["generation"] == 2 and restarted["restarts"] == 1
    assert restarted["pid"] != started["pid"]
    stopped = await api.ok("POST", "host/stop")
    assert stopped["state"] == "stopped" and stopped["pid"] is None
    code, doc = await api.call("GET", "host/logs?after=x")
    assert code == 400 and doc["detail"]["error"] == "invalid_query"


async def test_host_control_refused_during_a_run(api: Api) -> None:
    session = await api.session()
    run_id = await api.start_run(session, "slow")
    await api.first_output(run_id)
    for action in ("stop", "restart"):
        code, doc = await api.call("POST", f"host/{action}")
        assert code == 409 and doc["detail"]["active_run_id"] == run_id
    await api.ok("DELETE", f"runs/{run_id}")


async def test_host_control_refused_during_a_suite_run(api: Api) -> None:
    session = await api.session()
    slow = await api.start_run(session, "slow")  # a stored input whose replay streams a while
    await api.first_output(slow)
    await api.ok("DELETE", f"runs/{slow}")
    suite = await api.ok("POST", "suites", {"name": "holds the project",
                                            "cases": [{"run_id": slow}]}, 201)
    srun = (await api.ok("POST", f"suites/{suite['id']}/runs", None, 202))["suite_run_id"]
    case_run = await eventually(lambda: api.ok("GET", f"suite-runs/{srun}"),
                                lambda r: bool(r["cases"][0]["run_ids"]), "the case started")
    case_run_id = case_run["cases"][0]["run_ids"][0]
    await api.first_output(case_run_id)
    generation = (await api.ok("GET", "host"))["generation"]
    for action in ("stop", "restart"):
        code, doc = await api.call("POST", f"host/{action}")
        assert code == 409, doc
        assert doc["detail"]["error"] == "active_run_conflict"
        # The suite run holds the project: both ids, as a run's own start gets them.
        assert doc["detail"]["suite_run_id"] == srun
        assert doc["detail"]["active_run_id"] == case_run_id
    host = await api.ok("GET", "host")
    assert (host["state"], host["generation"]) == ("ready", generation), "nothing was done"
    await api.ok("DELETE", f"suite-runs/{srun}")
    await eventually(lambda: api.ok("GET", f"suite-runs/{srun}"),
                     lambda r: r["status"] != "running", "the suite run ended")
    assert (await api.ok("POST", "host/stop"))["state"] == "stopped"


async def test_follow_logs_streams_new_lines(api: Api) -> None:
    async with api.http.get(P + "/host/logs?follow=1",
                            timeout=aiohttp.ClientTimeout(total=30)) as resp:
        assert resp.headers["Content-Type"].startswith("text/event-stream")
        await api.ok("POST", "host/start")
        async for event in parse_sse(resp):
            if "echo_agent ready on" in event.data["text"]:
                assert event.event == "log" and event.data["generation"] == 1
                break


async def test_project_events_report_host_generations_and_run_status(api: Api) -> None:
    seen: list[tuple[str, dict]] = []  # type: ignore[type-arg]
    done = asyncio.Event()

    async def listen() -> None:
        async with api.http.get(P + "/events", timeout=aiohttp.ClientTimeout(total=60)) as resp:
            async for event in _events(resp):
                seen.append(event)
                if event[0] == "run.status" and event[1]["status"] == "completed":
                    done.set()
                    return

    listener = asyncio.create_task(listen())
    try:
        session = await api.session()
        await api.wait_status(await api.start_run(session, "stream watch me"))
        await asyncio.wait_for(done.wait(), 30)
    finally:
        listener.cancel()
        await asyncio.gather(listener, return_exceptions=True)
    kinds = [k for k, _ in seen]
    assert kinds[:2] == ["host.state", "run.active"]
    host_states = [(d["state"], d["generation"]) for k, d in seen if k == "host.state"]
    assert ("starting", 1) in host_states and ("ready", 1) in host_states
    statuses = [d["status"] for k, d in seen if k == "run.status"]
    assert statuses == ["queued", "preparing", "running", "completed"]


async def _events(resp: aiohttp.ClientResponse):  # type: ignore[no-untyped-def]
    fields: dict[str, str] = {}
    async for raw in resp.content:
        line = raw.decode().rstrip("\n")
        if not line:
            if "data" in fields:
                import orjson
                yield fields.get("event", ""), orjson.loads(fields["data"])
            fields = {}
        elif not line.startswith(":"):
            name, _, value = line.partition(": ")
            fields[name] = value


async def _log_offsets(api: Api, count: int, headers: dict[str, str], query: str = ""
                       ) -> list[int]:
    """The offsets of the first `count` lines a `follow=1` stream sends, then it is closed."""
    offsets: list[int] = []
    async with api.http.get(f"{P}/host/logs?follow=1{query}", headers=headers,
                            timeout=aiohttp.ClientTimeout(total=30)) as resp:
        assert resp.status == 200
        async for event in parse_sse(resp):
            assert event.event == "log" and event.id == event.data["offset"]
            offsets.append(event.id)
            if len(offsets) == count:
                break
    return offsets


async def test_a_follow_reconnect_resumes_after_its_last_event_id(api: Api) -> None:
    await api.ok("POST", "host/start")
    for _ in range(3):  # a line per generation: four to page through
        await api.ok("POST", "host/restart")
    total = (await api.ok("GET", "host/logs?limit=5000"))["next"]
    assert total >= 4
    first = await _log_offsets(api, 2, {})
    # The browser's reconnect: only Last-Event-ID, the id of the last line it got.
    rest = await _log_offsets(api, total - 2, {"Last-Event-ID": str(first[-1])})
    assert first + rest == list(range(total))  # no line twice, none missed
    # With both, the larger cursor wins (a page's manual reopen sends ?after=).
    assert await _log_offsets(api, 1, {"Last-Event-ID": "0"}, "&after=3") == [3]
    assert await _log_offsets(api, 1, {"Last-Event-ID": "2"}, "&after=1") == [3]
    for query in ("host/logs?follow=1", "host/logs"):  # refused, not ignored, either way
        code, doc = await api.call("GET", query, headers={"Last-Event-ID": "x"})
        assert code == 400 and doc["detail"]["error"] == "invalid_cursor", query
    code, _ = await api.call("GET", "host/logs", headers={"Last-Event-ID": ""})
    assert code == 200, "an empty cursor header counts as none"


async def test_a_follow_cursor_from_before_a_daemon_restart_starts_over(api: Api,
                                                                         daemon: Stack) -> None:
    await api.ok("POST", "host/start")
    for _ in range(2):
        await api.ok("POST", "host/restart")
    last = (await api.ok("GET", "host/logs?limit=5000"))["next"] - 1
    assert last >= 2
    daemon.start_daemon()  # the new daemon numbers its Host's lines from 0 again
    await api.ok("POST", "host/start")
    # A browser reconnecting after the restart still sends the old daemon's last id.
    assert await _log_offsets(api, 1, {"Last-Event-ID": str(last)}) == [0]
