"""Drill: the wall clock jumps back and forth during runs.

A fault we cannot cause for real here: setting the system clock would disturb the whole
machine (and needs CAP_SYS_TIME). So the daemon runs in-process with its wall-clock
function replaced by one that jumps ±1 hour on every call; the Host is a real child
process and the store a real SQLite file. Durations must come from the monotonic clock and
order from seq/insertion, never from wall time.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from llamon_playground.common.config import build_settings
from llamon_playground.daemon.app import build_services, make_app, shutdown
from llamon_playground.daemon.runs import journal, manager
from llamon_playground.daemon.store import database, history
from tests.support.api import Api

pytestmark = pytest.mark.drill

JUMPS = ["2026-01-01T12:00:00.000Z", "2026-01-01T11:00:00.000Z", "2026-01-01T13:00:00.000Z",
         "2025-12-31T23:00:00.000Z"]


@pytest.fixture
async def jumping_api(project: Path, runtime_base: Path,
                      monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Api]:
    clock = itertools.cycle(JUMPS)
    for module in (database, history, manager, journal):
        monkeypatch.setattr(module, "utcnow", lambda: next(clock))
    settings = build_settings(project, {"LLAMON_PLAYGROUND_RUNTIME_DIR": str(runtime_base)})
    settings = dataclasses.replace(settings, watch=False)
    services = await build_services(settings, dict(os.environ))
    client: TestClient[Any, Any] = TestClient(TestServer(make_app(services)))
    await client.start_server()
    try:
        yield Api.for_url(str(client.make_url("")).rstrip("/"))
    finally:
        await client.close()
        await shutdown(services)


async def test_clock_jumps_do_not_break_durations_or_order(jumping_api: Api) -> None:
    api = jumping_api
    try:
        session = await api.session()
        ids = []
        for text in ("stream one", "stream two three", "stream four"):
            run = await api.wait_status(await api.start_run(session, text))
            assert run["status"] == "completed"
            assert 0 < run["duration_ms"] < 60_000, run["duration_ms"]
            ids.append(run["id"])
        listed = [r["id"] for r in (await api.ok("GET", f"sessions/{session}/runs"))["runs"]]
        assert listed == ids, "runs list in creation order whatever the wall clock said"
        events = await api.events(ids[1])
        assert [e.id for e in events] == sorted(e.id for e in events)
        assert events[-1].data["status"] == "completed"
        print("wall clock jumped ±1 h on every read: 3 runs completed with positive "
              "monotonic durations, listed in creation order, events in seq order")
    finally:
        await api.close()
