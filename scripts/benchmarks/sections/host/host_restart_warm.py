"""Warm Host restarts: Studio's save-then-run with generations forked from the warm parent.

  host_restart_warm.save_ready   file written, POST a run naming it in changed_files ->
                                 /events says the new generation is Ready
  host_restart_warm.save_delta   the same, to the run's first output.delta on its stream
  host_restart_warm.watch_delta  an outside edit (no changed_files: an editor, `sed -i`), then
                                 Send as soon as the Playground has noticed it -> the run's
                                 first output.delta (the run waits for the watcher's quiet
                                 period and restart, then runs on the new generation)
  host_restart_warm.cold_ready   save_ready for the same project with `warm_start = false`
All  vs  the floor: the same Host command spawned directly, its agent card polled until the
first 200, measured between them in the same run. The notes break each save down: until the
old generation is told to stop (the watcher's notice and quiet period for an outside edit),
the fork and the Host's import until it listens (its "ready on" log line), the readiness
probe until Ready, and the run's send until its first output.
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
# Targets as ratios to the floor: 40 ms (a save) and 100 ms (an outside edit) to the first
# output on the quiet machine, where the floor (a cold spawn of the example) took 358 ms.
SAVE_DELTA_RATIO = 0.11
WATCH_DELTA_RATIO = 0.28
NOTICE_POLL_S = 0.005  # GET /host until the watcher holds the edit (then Send)
LISTENING = "ready on"  # the example Host's line once its socket listens


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
        self.breakdowns: list[dict[str, float]] = []  # ms after the write, per sample
        self.last_write = -float("inf")
        self.log_next = 0  # GET /host/logs cursor

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
        wall = time.time()
        self.last_write = t
        self.touched.write_bytes(self.original + f"# bench warm save {n} {time.time_ns()}\n"
                                 .encode())
        run = await call(self.http, "POST", f"sessions/{self.session}/runs",
                         {"parts": [{"kind": "text", "text": "stream saved warm"}],
                          "changed_files": ["app/__init__.py"]}, want=202)
        delta = await self._first_delta(run["run_id"])
        ready = await self.tap.wait_for("ready", self.gen + 1, mark, 30)
        await self.tap.wait_run_end(run["run_id"], 30)
        await self._ended(run["run_id"], mark, t, wall, delta)
        return ready - t, delta - t

    async def edit_then_send(self, n: int) -> float:
        """Seconds from an outside edit to the first output.delta of a run sent as soon as
        the watcher has noticed the edit (the run waits for the restart it causes)."""
        # A lone edit: one within WATCH_QUIET_MAX of the previous write continues that
        # write's burst, whose quiet period has grown (host_manager/watch/watcher.py).
        lone = self.stack.settings.watch_quiet_max + 0.05 - (time.perf_counter()
                                                             - self.last_write)
        if lone > 0:
            await asyncio.sleep(lone)
        mark = len(self.tap.seen)
        t = time.perf_counter()
        wall = time.time()
        self.last_write = t
        self.touched.write_bytes(self.original + f"# bench outside edit {n} {time.time_ns()}\n"
                                 .encode())
        while not (await call(self.http, "GET", "host"))["watch"]["pending"]:
            if time.perf_counter() - t > 10:
                raise RuntimeError("the watcher never noticed the edit")
            await asyncio.sleep(NOTICE_POLL_S)
        noticed = time.perf_counter()
        run = await call(self.http, "POST", f"sessions/{self.session}/runs",
                         {"parts": [{"kind": "text", "text": "stream edited"}]}, want=202)
        delta = await self._first_delta(run["run_id"])
        await self.tap.wait_run_end(run["run_id"], 30)
        done = await call(self.http, "GET", f"runs/{run['run_id']}")
        if done["status"] != "completed" or done["generation"] != self.gen + 1:
            raise RuntimeError(f"the run after an outside edit ended {done['status']} "
                               f"({done.get('reason')}) on generation {done['generation']}, "
                               f"not completed on {self.gen + 1}")
        await self._ended(run["run_id"], mark, t, wall, delta,
                          noticed=round((noticed - t) * 1000, 1))
        return delta - t

    async def _ended(self, run_id: str, mark: int, t: float, wall: float, delta: float,
                     **extra: float) -> None:
        """The sample's breakdown (ms after the write), for the notes."""
        self.gen += 1
        status = await call(self.http, "GET", "host")
        self.modes.append((status.get("start_mode"), status.get("start_reason")))
        phases = self.tap.phases(mark, t)
        listened = await self._listened(self.gen)
        if listened is not None:
            phases["listening"] = round((listened - wall) * 1000, 1)
        phases["first_delta"] = round((delta - t) * 1000, 1)
        self.breakdowns.append({**extra, **phases})

    async def _listened(self, generation: int) -> float | None:
        """When the generation's "ready on" line was read (wall clock), if it wrote one."""
        doc = await call(self.http, "GET", f"host/logs?after={self.log_next}&limit=1000")
        self.log_next = doc["next"]
        times = [line["time"] for line in doc["lines"]
                 if line["generation"] == generation and LISTENING in line["text"]]
        return times[0] if times else None

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
    watch_delta: list[float] = []
    try:
        await warm.open()
        await cold.open()
        # Warm-up: a run in the first generation, the module report, a restart that
        # preloads what it reported, and one more (page cache, pyc files) on every side.
        await warm.once(-1)
        await asyncio.sleep(REPORT_WAIT_S)
        await warm.once(-2)
        await warm.once(-3)
        await warm.edit_then_send(-4)
        await cold.once(-1)
        floor_log = tmp / "floor-host.log"
        await floor_once(warm.stack, owned, floor_log)
        for i in range(cfg.restart_samples):
            order = (("floor", "warm", "watch", "cold") if i % 2 == 0
                     else ("cold", "watch", "warm", "floor"))
            for what in order:
                if what == "floor":
                    floor.append((await floor_once(warm.stack, owned, floor_log))[0])
                elif what == "warm":
                    r, d = await warm.once(i)
                    ready.append(r)
                    delta.append(d)
                elif what == "watch":
                    watch_delta.append(await warm.edit_then_send(i))
                else:
                    r, d = await cold.once(i)
                    cold_ready.append(r)
                    cold_delta.append(d)
                await asyncio.sleep(0.2)  # let the previous generation's exit settle
            log(f"host_restart_warm {i + 1}: floor {floor[-1] * 1000:.0f} ms, warm save->ready "
                f"{ready[-1] * 1000:.0f} ms, ->first delta {delta[-1] * 1000:.0f} ms, outside "
                f"edit->first delta {watch_delta[-1] * 1000:.0f} ms, cold save->ready "
                f"{cold_ready[-1] * 1000:.0f} ms")
        parent = (await call(warm.http, "GET", "host")).get("warm_parent")
    finally:
        await warm.close(owned)
        await cold.close(owned)
    fl = statistics.median(floor) * 1000
    base = "floor: same Host command spawned directly, to its agent card's first 200"
    warm_samples = [b for b in warm.breakdowns[4:] if "noticed" not in b]
    watch_samples = [b for b in warm.breakdowns[4:] if "noticed" in b]
    notes: dict[str, Any] = {
        "samples": cfg.restart_samples, "floor_ms": [round(x * 1000) for x in floor],
        "warm_ready_ms": [round(x * 1000) for x in ready],
        "warm_first_delta_ms": [round(x * 1000) for x in delta],
        "cold_ready_ms": [round(x * 1000) for x in cold_ready],
        "cold_first_delta_ms": [round(x * 1000) for x in cold_delta],
        "warm_modes": warm.modes[4:], "cold_modes": cold.modes[1:], "warm_parent": parent,
        "save_ms_after_write": warm_samples, "save_median_ms": breakdown(warm_samples)}
    watch_notes: dict[str, Any] = {
        "watch_first_delta_ms": [round(x * 1000) for x in watch_delta],
        "watch_quiet_s": [warm.stack.settings.watch_quiet, warm.stack.settings.watch_quiet_max],
        "edit_ms_after_write": watch_samples, "median_ms": breakdown(watch_samples),
        "explained": "noticed: GET /host says the edit is pending (watchfiles' step + our "
                     "poll), then the run is posted; stopping: the quiet period ended and "
                     "the watcher restarts the Host; listening: the fork imported the "
                     "project and its server listens; ready: the readiness probe answered; "
                     "first_delta: the run's send, to its first output.delta"}
    return [
        Figure("host_restart_warm.save_ready", statistics.median(ready) * 1000, "ms", fl, base,
               Target("ratio", "<=", 0.25), notes),
        # 40 ms and 100 ms on the quiet machine, whose cold spawn (the floor) took 358 ms.
        Figure("host_restart_warm.save_delta", statistics.median(delta) * 1000, "ms", fl, base,
               Target("ratio", "<=", SAVE_DELTA_RATIO)),
        Figure("host_restart_warm.watch_delta", statistics.median(watch_delta) * 1000, "ms",
               fl, base, Target("ratio", "<=", WATCH_DELTA_RATIO), watch_notes),
        Figure("host_restart_warm.cold_ready", statistics.median(cold_ready) * 1000, "ms", fl,
               base, Target("ratio", "<=", 1.2)),
    ]


def breakdown(samples: list[dict[str, float]]) -> dict[str, float]:
    """Medians of each step, ms: the write until the watcher noticed it, until the old
    generation was told to stop, the stop, the fork and import until the new one listens,
    the readiness probe until Ready, the send until the first output."""
    steps = {"until_noticed": ("", "noticed"), "until_stopping": ("", "stopping"),
             "stopping_to_starting": ("stopping", "starting"),
             "fork_and_import": ("starting", "listening"),
             "readiness": ("listening", "ready"), "send": ("ready", "first_delta")}
    out = {}
    for name, (a, b) in steps.items():
        xs = [p[b] - (p[a] if a else 0.0) for p in samples if b in p and (not a or a in p)]
        if xs:
            out[name] = round(statistics.median(xs), 1)
    return out
