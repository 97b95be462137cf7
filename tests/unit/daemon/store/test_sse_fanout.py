"""SSE fan-out in-process on a real store and a real HTTP server: hand-over and slow clients."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from llamon_playground.common.config import build_settings
from llamon_playground.daemon.app import Daemon, build_services, make_app, shutdown
from llamon_playground.daemon.http.sse import RECONNECT
from llamon_playground.daemon.store.history import create_session, insert_run

N_EVENTS = 20000


@pytest.fixture
async def services(tmp_path: Path) -> AsyncIterator[Daemon]:
    settings = build_settings(tmp_path, {"LLAMON_PLAYGROUND_RUNTIME_DIR": str(tmp_path / "rt")})
    settings = dataclasses.replace(settings, event_ring_size=16, keepalive_interval=0.05)
    svc = await build_services(settings, {})
    await svc.store.open()
    yield svc
    await shutdown(svc)


@pytest.fixture
async def client(services: Daemon) -> AsyncIterator[TestClient[Any, Any]]:
    async with TestClient(TestServer(make_app(services))) as c:
        yield c


async def new_live_run(services: Daemon) -> str:
    session = await create_session(services.store, "s", {})
    run_id = "run_" + "0" * 31 + "1"
    await insert_run(services.store, {"id": run_id, "session_id": session["id"],
                                      "status": "running", "created_at": "t",
                                      "context_id": "c", "input": {"parts": []}}, [])
    services.hub.open_log(run_id)
    return run_id


async def produce(services: Daemon, run_id: str, started: asyncio.Event) -> None:
    for i in range(N_EVENTS):
        services.store.append_event(run_id, "output.delta", {"text": str(i)})
        if i % 50 == 0:
            await asyncio.sleep(0)  # a token streamer yields between chunks
        if i == 200:
            started.set()
    services.store.append_event(run_id, "run.status", {"status": "completed"})
    await services.store.flush()


async def read_all(client: TestClient[Any, Any], run_id: str, slow: bool = False) -> list[int]:
    ids: list[int] = []
    async with client.get(f"/api/playground/v1/runs/{run_id}/events") as resp:
        assert resp.status == 200
        async for line in resp.content:
            if line.startswith(b"id: "):
                ids.append(int(line[4:]))
            if slow and len(ids) % 500 == 0:
                await asyncio.sleep(0.05)  # simulates a client that reads slowly
    return ids


async def test_fast_producer_many_clients_no_gap_no_duplicate(
        services: Daemon, client: TestClient[Any, Any]) -> None:
    run_id = await new_live_run(services)
    replays = 0
    real_events_after = services.store.events_after

    async def counting_events_after(*args: Any, **kw: Any) -> Any:
        nonlocal replays
        replays += 1
        return await real_events_after(*args, **kw)
    services.store.events_after = counting_events_after  # type: ignore[method-assign]

    started = asyncio.Event()
    producer = asyncio.create_task(produce(services, run_id, started))
    early = asyncio.create_task(read_all(client, run_id))
    slow = asyncio.create_task(read_all(client, run_id, slow=True))
    await started.wait()
    late = asyncio.create_task(read_all(client, run_id))  # joins mid-stream: hand-over
    await producer
    assert not slow.done(), "the producer never waits for a slow reader"
    results = await asyncio.gather(early, slow, late)
    expected = [r.seq for r in await services.store.events_after(run_id, 0, limit=N_EVENTS + 10)]
    assert len(expected) == N_EVENTS + 1
    for ids in results:
        assert ids == expected
    assert replays > 0, "a reader behind the live log's floor was caught up from SQLite"


async def test_keepalive_comments_while_idle(services: Daemon,
                                             client: TestClient[Any, Any]) -> None:
    run_id = await new_live_run(services)
    async with client.get(f"/api/playground/v1/runs/{run_id}/events") as resp:
        opening = await asyncio.wait_for(resp.content.readexactly(len(RECONNECT)), 5)
        assert opening == RECONNECT
        line = await asyncio.wait_for(resp.content.readline(), 5)
        assert line == b": keep-alive\n"
        services.store.append_event(run_id, "run.status", {"status": "completed"})
        rest = await asyncio.wait_for(resp.content.read(), 5)
        assert b"event: run.status" in rest
