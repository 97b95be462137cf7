"""Warm Host restarts: Studio's save-then-run with generations forked from the warm parent.

  host_restart_warm.save_ready   file written, POST a run naming it in changed_files ->
                                 /events says the new generation is Ready
  host_restart_warm.save_delta   the same, to the run's first output.delta on its stream
  host_restart_warm.cold_ready   save_ready for the same project with `warm_start = false`
All three  vs  the floor: the same Host command spawned directly, its agent card polled until
the first 200, measured between them in the same run.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from typing import Any

import aiohttp

from llamon_playground.common.contract import API_PREFIX
from scripts.benchmarks.clients.client import call, direct_session
from scripts.benchmarks.clients.project_events import ProjectEventsTap
from scripts.benchmarks.configs import HostConfig
from scripts.benchmarks.figures import Figure, Target, log
from scripts.benchmarks.owned import Owned
from scripts.benchmarks.sections.host.host_restart import floor_once
from scripts.benchmarks.stack import Stack, copy_example

# The first generation reports the modules it imported after 1 s and again after 5 s; the
# warm-up waits for both so the measured restarts fork from a fully preloaded parent.
REPORT_WAIT_S = 5.5


class SaveLoop:
    """One daemon's project: save a file, run, time Ready and the first output delta."""

    def __init__(self, stack: Stack) -> None:
        self.stack = stack
        self.http = direct_session(stack)
        self.tap = ProjectEventsTap(self.http)
        self.touched = stack.project / "app" / "__init__.py"
        self.original = self.touched.read_bytes()
        self.gen = 0
        self.session = ""
        self.modes: list[tuple[str | None, str | None]] = []

    async def open(self) -> None:
        status = await call(self.http, "POST", "host/start")
        if status["state"] != "ready":
            raise RuntimeError(f"the Host is not Ready: {status}")
        self.gen = int(status["generation"])
        await self.tap.start()
        self.session = (await call(self.http, "POST", "sessions", {}, want=201))["id"]

    async def once(self, n: int) -> tuple[float, float]:
        """Seconds from the write to (Ready, the run's first output.delta)."""
        mark = len(self.tap.seen)
        t = time.perf_counter()
        self.touched.write_bytes(self.original + f"# bench warm save {n} {time.time_ns()}\n"
                                 .encode())
        run = await call(self.http, "POST", f"sessions/{self.session}/runs",
                         {"parts": [{"kind": "text", "text": "stream saved warm"}],
                          "changed_files": ["app/__init__.py"]}, want=202)
        delta = await self._first_delta(run["run_id"])
        ready = await self.tap.wait_for("ready", self.gen + 1, mark, 30)
        await self.tap.wait_run_end(run["run_id"], 30)
        self.gen += 1
        status = await call(self.http, "GET", "host")
        self.modes.append((status.get("start_mode"), status.get("start_reason")))
        return ready - t, delta - t

    async def _first_delta(self, run_id: str) -> float:
        async with self.http.get(f"{API_PREFIX}/runs/{run_id}/events",
                                 timeout=aiohttp.ClientTimeout(total=60)) as resp:
            async for line in resp.content:
                if line.startswith(b"event: output.delta"):
                    return time.perf_counter()
        raise RuntimeError(f"run {run_id} ended without output")

    async def close(self, owned: Owned) -> None:
        self.touched.write_bytes(self.original)
        await self.tap.close()
        await self.http.close()
        owned.close_stack(self.stack)


async def bench_host_restart_warm(quick: bool, owned: Owned) -> list[Figure]:
    cfg = HostConfig.make(quick)
    tmp = owned.tmpdir("lpbw")
    warm_project = copy_example(tmp / "warm")
    cold_project = copy_example(tmp / "cold")
    pyproject = cold_project / "pyproject.toml"
    pyproject.write_text(pyproject.read_text() + "warm_start = false\n")
    warm = SaveLoop(owned.start(warm_project))
    cold = SaveLoop(owned.start(cold_project))
    floor: list[float] = []
    ready: list[float] = []
    delta: list[float] = []
    cold_ready: list[float] = []
    cold_delta: list[float] = []
    try:
        await warm.open()
        await cold.open()
        # Warm-up: a run in the first generation, the module report, a restart that
        # preloads what it reported, and one more (page cache, pyc files) on every side.
        await warm.once(-1)
        await asyncio.sleep(REPORT_WAIT_S)
        await warm.once(-2)
        await warm.once(-3)
        await cold.once(-1)
        floor_log = tmp / "floor-host.log"
        await floor_once(warm.stack, owned, floor_log)
        for i in range(cfg.restart_samples):
            order = ("floor", "warm", "cold") if i % 2 == 0 else ("cold", "warm", "floor")
            for what in order:
                if what == "floor":
                    floor.append((await floor_once(warm.stack, owned, floor_log))[0])
                elif what == "warm":
                    r, d = await warm.once(i)
                    ready.append(r)
                    delta.append(d)
                else:
                    r, d = await cold.once(i)
                    cold_ready.append(r)
                    cold_delta.append(d)
                await asyncio.sleep(0.2)  # let the previous generation's exit settle
            log(f"host_restart_warm {i + 1}: floor {floor[-1] * 1000:.0f} ms, warm save->ready "
                f"{ready[-1] * 1000:.0f} ms, ->first delta {delta[-1] * 1000:.0f} ms, cold "
                f"save->ready {cold_ready[-1] * 1000:.0f} ms")
        parent = (await call(warm.http, "GET", "host")).get("warm_parent")
    finally:
        await warm.close(owned)
        await cold.close(owned)
    fl = statistics.median(floor) * 1000
    base = "floor: same Host command spawned directly, to its agent card's first 200"
    notes: dict[str, Any] = {
        "samples": cfg.restart_samples, "floor_ms": [round(x * 1000) for x in floor],
        "warm_ready_ms": [round(x * 1000) for x in ready],
        "warm_first_delta_ms": [round(x * 1000) for x in delta],
        "cold_ready_ms": [round(x * 1000) for x in cold_ready],
        "cold_first_delta_ms": [round(x * 1000) for x in cold_delta],
        "warm_modes": warm.modes[3:], "cold_modes": cold.modes[1:], "warm_parent": parent}
    return [
        Figure("host_restart_warm.save_ready", statistics.median(ready) * 1000, "ms", fl, base,
               Target("ratio", "<=", 0.25), notes),
        Figure("host_restart_warm.save_delta", statistics.median(delta) * 1000, "ms", fl, base,
               Target("ratio", "<=", 0.25)),
        Figure("host_restart_warm.cold_ready", statistics.median(cold_ready) * 1000, "ms", fl,
               base, Target("ratio", "<=", 1.2)),
    ]

