"""Host restart figures: how long until a new Host generation is Ready.

  host_restart.api      POST /host/restart until it answers (new generation Ready)
  host_restart.save     Studio's save-then-run: edit a file, POST a run naming it in
                        changed_files -> /events says the new generation is Ready
  host_restart.watch    an outside edit: the watcher restarts the Host after its quiet period
All three  vs  the floor: the same Host command spawned directly, its agent card polled until
the first 200 (then stopped).
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp

from llamon_playground.common.config import DAEMON_ONLY_ENV
from scripts.benchmarks.clients.client import call, direct_session
from scripts.benchmarks.clients.project_events import ProjectEventsTap
from scripts.benchmarks.configs import HostConfig
from scripts.benchmarks.figures import Figure, Target, log
from scripts.benchmarks.meters import MB, rss
from scripts.benchmarks.owned import Owned
from scripts.benchmarks.stack import Proc, Stack, copy_example, free_port

CARD = "/.well-known/agent-card.json"
POLL_S = 0.02  # the supervisor's own agent-card poll interval (host_manager/supervisor.py)


# -- the floor: the Host command, spawned directly ---------------------------------------------

def host_env(stack: Stack, port: int) -> dict[str, str]:
    """What the daemon gives its Host, minus the capture channel (no daemon here)."""
    env = {k: v for k, v in stack.env.items() if k not in DAEMON_ONLY_ENV}
    env.update({"PYTHONUNBUFFERED": "1", "LLAMON_HOST_PORT": str(port),
                "LLAMON_HOST_URL": f"http://127.0.0.1:{port}"})
    return env


async def floor_once(stack: Stack, owned: Owned, log_path: Path) -> tuple[float, float]:
    """Seconds from spawning `{python} -m app.host` to its agent card's first 200, and ms
    from then to its exit after SIGTERM to its group (as the daemon stops a Host)."""
    port = free_port()
    env = host_env(stack, port)
    url = f"http://127.0.0.1:{port}{CARD}"
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=2)) as http:
        t0 = time.perf_counter()
        proc = Proc([sys.executable, "-m", "app.host"], env, log_path, stack.project)
        owned.pids.add(proc.pid)
        try:
            deadline = time.monotonic() + 30
            while True:
                if proc.popen.poll() is not None:
                    raise RuntimeError(f"the floor Host exited with {proc.popen.returncode}: "
                                       f"{proc.output()[-500:]}")
                try:
                    async with http.get(url) as resp:
                        if resp.status == 200:
                            await resp.read()
                            elapsed = time.perf_counter() - t0
                            t1 = time.perf_counter()
                            proc.stop(grace=3.0)
                            return elapsed, (time.perf_counter() - t1) * 1000
                except (aiohttp.ClientError, TimeoutError):
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError("the floor Host never answered its agent card")
                await asyncio.sleep(POLL_S)
        finally:
            proc.stop(grace=3.0)


# -- host_restart ------------------------------------------------------------------------------

async def bench_host_restart(quick: bool, owned: Owned) -> list[Figure]:
    cfg = HostConfig.make(quick)
    tmp = owned.tmpdir("lpbh")
    project = copy_example(tmp)
    stack = owned.start(project)
    assert stack.daemon is not None
    daemon_pid = stack.daemon.pid
    http = direct_session(stack)
    tap = ProjectEventsTap(http)
    floor: list[float] = []
    floor_stops: list[float] = []  # ms from SIGTERM to the exit of a floor Host
    api: list[float] = []
    save: list[float] = []
    watch: list[float] = []
    detect: list[float] = []
    generations: list[int] = []
    api_phases: list[dict[str, float]] = []
    save_phases: list[dict[str, float]] = []
    touched = project / "app" / "__init__.py"
    original = touched.read_bytes()
    try:
        t0 = time.perf_counter()
        status = await call(http, "POST", "host/start")
        first_start = time.perf_counter() - t0
        if status["state"] != "ready":
            raise RuntimeError(f"the Host is not Ready: {status}")
        await tap.start()
        gen = int(status["generation"])

        async def one_api() -> float:
            nonlocal gen
            mark = len(tap.seen)
            t = time.perf_counter()
            doc = await call(http, "POST", "host/restart")
            elapsed = time.perf_counter() - t
            if doc["state"] != "ready" or int(doc["generation"]) != gen + 1:
                raise RuntimeError(f"restart answered {doc['state']} gen {doc['generation']} "
                                   f"(wanted ready gen {gen + 1})")
            await tap.wait_for("ready", gen + 1, mark, 10)
            api_phases.append(tap.phases(mark, t))
            gen += 1
            generations.append(gen)
            return elapsed

        session = (await call(http, "POST", "sessions", {}, want=201))["id"]

        last_touch = -float("inf")  # when a sample last wrote the watched file

        async def one_run_save(n: int) -> float:
            nonlocal gen, last_touch
            mark = len(tap.seen)
            t = time.perf_counter()
            touched.write_bytes(original + f"# bench run save {n} {time.time_ns()}\n".encode())
            last_touch = time.perf_counter()
            run = await call(http, "POST", f"sessions/{session}/runs",
                             {"parts": [{"kind": "text", "text": "stream saved"}],
                              "changed_files": ["app/__init__.py"]}, want=202)
            ready = await tap.wait_for("ready", gen + 1, mark, 30)
            await tap.wait_run_end(run["run_id"], 30)
            gen += 1
            generations.append(gen)
            return ready - t

        async def one_save(n: int) -> tuple[float, float]:
            nonlocal gen, last_touch
            # A lone outside edit: a change within WATCH_QUIET_MAX of the one before it
            # continues that one's burst, whose quiet period has grown with it (a storm's
            # rule, host_manager/watch/watcher.py). Right after the save+run sample, half the
            # samples measured that (~350 ms) instead of a single save.
            lone = stack.settings.watch_quiet_max + 0.05 - (time.perf_counter() - last_touch)
            if lone > 0:
                await asyncio.sleep(lone)
            mark = len(tap.seen)
            t = time.perf_counter()
            touched.write_bytes(original + f"# bench save {n} {time.time_ns()}\n".encode())
            last_touch = time.perf_counter()
            stopping = await tap.wait_for("stopping", gen, mark, 30)
            ready = await tap.wait_for("ready", gen + 1, mark, 30)
            save_phases.append(tap.phases(mark, t))
            gen += 1
            generations.append(gen)
            return ready - t, stopping - t

        # Warm-up: the first spawn pays for cold page cache / pyc files, on both sides.
        floor_log = tmp / "floor-host.log"
        floor_stops.append((await floor_once(stack, owned, floor_log))[1])
        await one_api()
        for i in range(cfg.restart_samples):
            order = (("floor", "api", "save", "watch") if i % 2 == 0
                     else ("watch", "save", "api", "floor"))
            for what in order:
                if what == "floor":
                    started, stopped = await floor_once(stack, owned, floor_log)
                    floor.append(started)
                    floor_stops.append(stopped)
                elif what == "api":
                    api.append(await one_api())
                elif what == "save":
                    save.append(await one_run_save(i))
                else:
                    total, until_stop = await one_save(i)
                    watch.append(total)
                    detect.append(until_stop)
                await asyncio.sleep(0.2)  # let the previous generation's exit settle
            log(f"host_restart {i + 1}: floor {floor[-1] * 1000:.0f} ms, api "
                f"{api[-1] * 1000:.0f} ms, save+run {save[-1] * 1000:.0f} ms, watch "
                f"{watch[-1] * 1000:.0f} ms (detected after {detect[-1] * 1000:.0f} ms)")
        final = await call(http, "GET", "host")
        owned.notes["restart_daemon_rss_mb"] = round(rss(daemon_pid) / MB, 1)
    finally:
        touched.write_bytes(original)
        await tap.close()
        await http.close()
        owned.close_stack(stack)
    fl = statistics.median(floor)
    ms = [x * 1000 for x in floor]
    base = "floor: same Host command spawned directly, to its agent card's first 200"
    notes: dict[str, Any] = {
        "samples": cfg.restart_samples, "floor_ms": [round(x) for x in ms],
        "api_ms": [round(x * 1000) for x in api], "first_start_ms": round(first_start * 1000),
        "poll_interval_ms": POLL_S * 1000, "generations": generations,
        "restarts_reported": final.get("restarts"),
        "stop_step": final.get("last_stop_step"),
        "phases_ms_after_post": api_phases[1:],
        "median_ms": breakdown(api_phases[1:]),
        "floor_sigterm_to_exit_ms": [round(x) for x in floor_stops[1:]]}
    restart_part = [(s - d) * 1000 for s, d in zip(watch, detect, strict=True)]
    watch_notes = {"watch_ms": [round(x * 1000) for x in watch],
                  "save_to_stopping_ms": [round(x * 1000) for x in detect],
                  "stopping_to_ready_ms": [round(x) for x in restart_part],
                  "watch_quiet_s": [stack.settings.watch_quiet, stack.settings.watch_quiet_max],
                  "phases_ms_after_save": save_phases,
                  "median_ms": breakdown(save_phases),
                  "explained": "edit->Ready = watchfiles step (20 ms) + quiet period "
                               "(LLAMON_PLAYGROUND_WATCH_QUIET for a single save) + "
                               "fingerprint + restart"}
    save_notes = {"save_ms": [round(x * 1000) for x in save],
                  "explained": "file written, then POST run with changed_files: the run's "
                               "restart phase restarts the Host (no quiet period)"}
    return [
        Figure("host_restart.api", statistics.median(api) * 1000, "ms", fl * 1000, base,
               Target("ratio", "<=", 1.2), notes),
        Figure("host_restart.save", statistics.median(save) * 1000, "ms", fl * 1000, base,
               Target("ratio", "<=", 1.2), save_notes),
        Figure("host_restart.watch", statistics.median(watch) * 1000, "ms", fl * 1000, base,
               None, watch_notes),
    ]


def breakdown(phases: list[dict[str, float]]) -> dict[str, float]:
    """Medians of: until stopping, the stop itself, stopped->starting, starting->ready."""
    spans = {"until_stopping": ("", "stopping"), "stop": ("stopping", "stopped"),
             "stopped_to_starting": ("stopped", "starting"),
             "start_to_ready": ("starting", "ready")}
    out = {}
    for name, (a, b) in spans.items():
        xs = [p[b] - (p[a] if a else 0.0) for p in phases if b in p and (not a or a in p)]
        if xs:
            out[name] = round(statistics.median(xs), 1)
    return out
