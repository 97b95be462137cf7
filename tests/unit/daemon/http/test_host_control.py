"""Host stop and restart against the project's one busy rule, on the real daemon app
in-process (a real store and supervisor; no Host is started).

Between two cases of a suite run no run is active, yet the suite run holds the project: a
window an end-to-end test cannot catch at will (it lasts a few milliseconds), so the suite
run's hold is taken here exactly as the suite service takes it (`hold_for_suite`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from llamon_playground.common.config import build_settings
from llamon_playground.common.contract import API_PREFIX
from llamon_playground.daemon.app import Daemon, build_services, make_app, shutdown


@pytest.fixture
async def services(tmp_path: Path) -> AsyncIterator[Daemon]:
    settings = build_settings(tmp_path, {"LLAMON_PLAYGROUND_RUNTIME_DIR": str(tmp_path / "rt")})
    svc = await build_services(settings, {})
    yield svc
    await shutdown(svc)


@pytest.fixture
async def client(services: Daemon) -> AsyncIterator[TestClient[Any, Any]]:
    async with TestClient(TestServer(make_app(services))) as c:
        yield c


@pytest.mark.parametrize("action", ["stop", "restart"])
async def test_host_control_is_refused_between_two_cases_of_a_suite_run(
        services: Daemon, client: TestClient[Any, Any], action: str) -> None:
    services.runs.hold_for_suite("srun_between_cases")
    assert services.runs.active is None
    resp = await client.post(f"{API_PREFIX}/host/{action}")
    assert resp.status == 409
    detail = (await resp.json())["detail"]
    assert detail["error"] == "active_run_conflict"
    assert (detail["active_run_id"], detail["suite_run_id"]) == (None, "srun_between_cases")
    assert services.host.status()["restarts"] == 0, "nothing was done"
    services.runs.release_suite("srun_between_cases")
    resp = await client.post(f"{API_PREFIX}/host/stop")  # a stopped Host: stop is a no-op
    assert resp.status == 200 and (await resp.json())["state"] == "stopped"


async def test_every_refusal_of_a_busy_project_answers_alike(
        services: Daemon, client: TestClient[Any, Any]) -> None:
    services.runs.hold_for_suite("srun_held")
    answers = []
    for method, path in [("POST", "/host/stop"), ("POST", "/host/restart"),
                         ("DELETE", "/sessions")]:
        resp = await client.request(method, API_PREFIX + path)
        answers.append((resp.status, (await resp.json())["detail"]))
    assert {status for status, _ in answers} == {409}
    assert {(d["error"], d["active_run_id"], d["suite_run_id"]) for _, d in answers} == {
        ("active_run_conflict", None, "srun_held")}
    services.runs.release_suite("srun_held")
