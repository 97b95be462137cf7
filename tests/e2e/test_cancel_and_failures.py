"""Cancel, Host errors and a Host that dies mid-run."""

from __future__ import annotations

from tests.support.api import Api
from tests.support.procs import Stack


# These two share the module's daemon (each in its own session, its run ended); cancel
# while queued needs a Host not started yet, and the crash its own Host to lose.
async def test_cancel_slow_run_keeps_host_running(module_api: Api) -> None:
    api = module_api
    session = await api.session()
    run_id = await api.start_run(session, "slow")
    await api.first_output(run_id)
    host_before = await api.ok("GET", "host")
    answer = await api.ok("DELETE", f"runs/{run_id}")
    assert answer == {"run_id": run_id, "status": "cancelled"}
    run = await api.run(run_id)
    assert run["status"] == "cancelled" and run["reason"] == "user_cancelled"
    events = await api.events(run_id)
    assert events[-1].data["status"] == "cancelled"
    host_after = await api.ok("GET", "host")
    assert host_after["state"] == "ready" and host_after["pid"] == host_before["pid"]
    code, doc = await api.call("DELETE", f"runs/{run_id}")
    assert code == 409 and doc["detail"]["error"] == "run_not_active"
    nxt = await api.wait_status(await api.start_run(session, "stream after cancel"))
    assert nxt["status"] == "completed"


async def test_cancel_while_queued_wins(api: Api) -> None:
    session = await api.session()
    # The Host is not started yet, so the run is still queued/preparing when cancel lands.
    run_id = await api.start_run(session, "stream never sent")
    answer = await api.ok("DELETE", f"runs/{run_id}")
    assert answer["status"] == "cancelled"
    run = await api.run(run_id)
    assert run["status"] == "cancelled" and run["reason"] == "user_cancelled"
    assert run["output"] == []
    statuses = [e.data["status"] for e in await api.events(run_id) if e.event == "run.status"]
    assert statuses[-1] == "cancelled" and "completed" not in statuses


async def test_host_error_frame_fails_the_run(module_api: Api) -> None:
    api = module_api
    session = await api.session()
    run = await api.wait_status(await api.start_run(session, "fail"))
    assert run["status"] == "failed" and run["reason"] == "host_error"
    assert run["error"]["kind"] == "error" and "fail" in run["error"]["message"]
    assert run["output"][-1] == run["error"]
    events = await api.events(run["id"])
    complete = [e.data for e in events if e.event == "run.phase" and e.data["phase"] == "complete"]
    assert complete[-1]["state"] == "failed" and complete[-1]["reason"] == "host_error"


async def test_host_exit_mid_run_fails_then_next_run_restarts_it(api: Api,
                                                                 daemon: Stack) -> None:
    session = await api.session()
    run = await api.wait_status(await api.start_run(session, "crash"))
    assert run["status"] == "failed" and run["reason"] == "host_exited"
    assert run["recommended_run_command"] == "python -m app.host"
    events = await api.events(run["id"])
    complete = [e.data for e in events if e.event == "run.phase" and e.data["phase"] == "complete"]
    assert complete[-1]["recommended_run_command"] == "python -m app.host"
    assert any("echo_agent" in line for line in complete[-1]["log_tail"])
    nxt = await api.wait_status(await api.start_run(session, "stream back again"))
    assert nxt["status"] == "completed" and nxt["generation"] == run["generation"] + 1
