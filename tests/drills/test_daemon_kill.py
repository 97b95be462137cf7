"""Drill: SIGKILL the daemon at random points, again and again; nothing acknowledged is lost."""

from __future__ import annotations

import asyncio
import random
import signal
from pathlib import Path

import psutil
import pytest

from tests.drills.checks import check_database, check_no_temp_blobs
from tests.support.api import Api
from tests.support.procs import stack_for

pytestmark = pytest.mark.drill

WORDS = " ".join(f"w{i}" for i in range(400))


async def _creating(api: Api, session: str, received: dict[str, list[int]],
                    rng: random.Random) -> None:
    body = {"parts": [{"kind": "text", "text": "stream " + WORDS}]}
    await asyncio.gather(*[api.call("POST", f"sessions/{session}/runs", body)
                           for _ in range(5)], return_exceptions=True)


async def _streaming(api: Api, session: str, received: dict[str, list[int]],
                     rng: random.Random) -> None:
    run_id = await api.start_run(session, "stream " + WORDS)
    ids = received.setdefault(run_id, [])
    stop_after = rng.randint(5, 300)
    async for ev in api.stream(run_id):
        ids.append(ev.id)
        if len(ids) >= stop_after:
            return


async def _restarting(api: Api, session: str, received: dict[str, list[int]],
                      rng: random.Random) -> None:
    await api.ok("POST", "host/start")
    await asyncio.wait_for(api.call("POST", "host/restart"), rng.uniform(0.01, 0.3))


async def _importing(api: Api, session: str, received: dict[str, list[int]],
                     rng: random.Random) -> None:
    await api.wait_status(await api.start_run(session, "data"))  # a run with a blob
    bundle = await api.ok("POST", "bundles/export", {})
    for _ in range(5):  # keep importing until the kill lands in one
        await api.ok("POST", "bundles/import", {"bundle": bundle}, 201)


POINTS = {"run creation": _creating, "mid-stream": _streaming, "Host restart": _restarting,
          "import": _importing}


async def test_daemon_sigkill_at_random_points(project: Path, runtime_base: Path, scale,
                                               rng: random.Random) -> None:  # type: ignore[no-untyped-def]
    rounds = scale.n(4, 24)
    received: dict[str, list[int]] = {}
    env = {"ECHO_CHUNK_DELAY_MS": "2"}
    with stack_for(project, runtime_base, extra_env=env) as stack:
        for i in range(rounds):
            stack.start_daemon()
            api = Api.for_socket(str(stack.settings.socket_path))
            name = list(POINTS)[i % len(POINTS)]
            try:
                session = await api.session()
                try:
                    await asyncio.wait_for(POINTS[name](api, session, received, rng),
                                           rng.uniform(0.05, 2.0))
                except (TimeoutError, asyncio.TimeoutError):
                    pass  # the kill lands wherever the work had got to
                hosts = stack.daemon.descendants()  # type: ignore[union-attr]
                stack.daemon.signal(signal.SIGKILL)  # type: ignore[union-attr]
                stack.daemon.wait(10)  # type: ignore[union-attr]
            finally:
                await api.close()
            _, alive = psutil.wait_procs(hosts, timeout=10)
            assert not alive, f"round {i} ({name}): Host outlived its daemon"
            stack.start_daemon()  # boot recovery runs here
            figures = check_database(stack.settings.db_path, received)
            check_no_temp_blobs(stack.settings.files_dir)
            print(f"round {i + 1}/{rounds}: killed during {name}; after restart "
                  f"integrity ok, {figures['runs']} runs all terminal, {figures['events']} "
                  f"events, {sum(map(len, received.values()))} received ids all stored")
            stack.daemon.stop()  # type: ignore[union-attr]
