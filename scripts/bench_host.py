"""Host supervision figures (issue "Host supervision"); run through `scripts/bench`.

  host_restart.api      POST /host/restart until it answers (new generation Ready)
  host_restart.save     Studio's save-then-run: edit a file, POST a run naming it in
                        changed_files -> /events says the new generation is Ready
  host_restart.watch    an outside edit: the watcher (after its quiet period) restarts
                        both  vs  the floor: spawn the same Host command directly and poll its
                        agent card until the first 200 (then kill it)
  daemon_idle_cpu       daemon CPU (% of one core) while idle, project with 10,000 watched
                        .py files and a Ready Host  vs  an idle `time.sleep` Python process
  daemon_rss            that daemon's RSS afterwards  vs  a Python process that imported the
                        daemon's code (daemon.app) and sleeps
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import bench_core as core
import orjson
from bench_common import (
    MB,
    P,
    RssSampler,
    Spawned,
    call,
    cpu_of,
    direct_session,
    free_port,
    rss,
    start_run,
)
from bench_core import Figure, Owned, Target, log

from llamon_playground.common.config import DAEMON_ONLY_ENV
from tests.support.procs import Stack, copy_example

CARD = "/.well-known/agent-card.json"
POLL_S = 0.02  # the supervisor's own agent-card poll interval (host_manager/supervisor.py)


@dataclass(frozen=True)
class HostBenchConfig:
    restart_samples: int = 7
    idle_s: float = 30.0
    idle_files: int = 10_000
    settle_s: float = 2.0

    @classmethod
    def make(cls, quick: bool) -> HostBenchConfig:
        return cls(restart_samples=2, idle_s=10.0, settle_s=1.0) if quick else cls()


# -- project events (host.state with generation) ----------------------------------------------

class ProjectEventsTap:
    """Follows GET /events on the daemon socket; records (arrival, state, generation)."""

    def __init__(self, http: aiohttp.ClientSession) -> None:
        self.http = http
        self.seen: list[tuple[float, str, int | None]] = []
        self.ended: set[str] = set()  # runs whose terminal run.status arrived
        self._changed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._opened = asyncio.Event()

    async def start(self) -> None:
        self._task = asyncio.create_task(self._read())
        await asyncio.wait_for(self._opened.wait(), 10)

    async def _read(self) -> None:
        async with self.http.get(f"{P}/events",
                                 timeout=aiohttp.ClientTimeout(total=None)) as resp:
            if resp.status != 200:
                raise RuntimeError(f"/events answered {resp.status}")
            self._opened.set()
            buf = b""
            async for chunk in resp.content.iter_any():
                now = time.perf_counter()
                buf += chunk
                while b"\n\n" in buf:
                    frame, buf = buf.split(b"\n\n", 1)
                    lines = dict(line.split(b": ", 1) for line in frame.split(b"\n")
                                 if b": " in line and not line.startswith(b":"))
                    if lines.get(b"event") == b"host.state":
                        doc = orjson.loads(lines[b"data"])
                        self.seen.append((now, doc["state"], doc.get("generation")))
                    elif lines.get(b"event") == b"run.status":
                        doc = orjson.loads(lines[b"data"])
                        if doc["status"] not in ("queued", "preparing", "running"):
                            self.ended.add(doc["run_id"])
                    else:
                        continue
                    self._changed.set()
                    self._changed = asyncio.Event()

    async def wait_for(self, state: str, min_generation: int, since: int,
                       timeout: float) -> float:
        """Arrival time of the first `state` with generation >= min_generation after index."""
        deadline = time.monotonic() + timeout
        while True:
            for t, s, g in self.seen[since:]:
                if s == state and g is not None and g >= min_generation:
                    return t
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no host.state {state} generation >= {min_generation} "
                                   f"within {timeout} s; saw {self.seen[since:]}")
            changed = self._changed
            try:
                await asyncio.wait_for(changed.wait(), left)
            except TimeoutError:
                pass

    async def wait_run_end(self, run_id: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while run_id not in self.ended:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"run {run_id} did not end within {timeout} s")
            changed = self._changed
            try:
                await asyncio.wait_for(changed.wait(), left)
            except TimeoutError:
                pass

    def phases(self, since: int, t0: float) -> dict[str, float]:
        """ms from t0 to the first stopping / stopped / starting / ready seen after `since`."""
        out: dict[str, float] = {}
        for t, s, _ in self.seen[since:]:
            if s not in out:
                out[s] = round((t - t0) * 1000, 1)
        return out

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)


# -- the floor: the Host command, spawned directly ---------------------------------------------

def host_env(stack: Stack, port: int) -> dict[str, str]:
    """What the daemon gives its Host, minus the capture channel (no daemon here)."""
    env = {k: v for k, v in stack.env.items() if k not in DAEMON_ONLY_ENV}
    env.update({"PYTHONUNBUFFERED": "1", "LLAMON_HOST_PORT": str(port),
                "LLAMON_HOST_URL": f"http://127.0.0.1:{port}"})
    return env


async def floor_once(stack: Stack, owned: Owned, log_path: Path) -> float:
    """Seconds from spawning `{python} -m app.host` to its agent card's first 200."""
    port = free_port()
    env = host_env(stack, port)
    url = f"http://127.0.0.1:{port}{CARD}"
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=2)) as http:
        t0 = time.perf_counter()
        proc = Spawned([sys.executable, "-m", "app.host"], stack.project, env, log_path)
        owned.pids.add(proc.pid)
        try:
            deadline = time.monotonic() + 30
            while True:
                if proc.popen.poll() is not None:
                    raise RuntimeError(f"the floor Host exited with {proc.popen.returncode}: "
                                       f"{log_path.read_text(errors='replace')[-500:]}")
                try:
                    async with http.get(url) as resp:
                        if resp.status == 200:
                            await resp.read()
                            elapsed = time.perf_counter() - t0
                            t1 = time.perf_counter()
                            proc.stop(grace=3.0)  # SIGTERM to the group, as the daemon does
                            FLOOR_STOPS.append((time.perf_counter() - t1) * 1000)
                            return elapsed
                except (aiohttp.ClientError, TimeoutError):
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError("the floor Host never answered its agent card")
                await asyncio.sleep(POLL_S)
        finally:
            proc.stop(grace=3.0)


# -- host_restart ------------------------------------------------------------------------------

async def bench_host_restart(quick: bool, owned: Owned) -> list[Figure]:
    cfg = HostBenchConfig.make(quick)
    tmp = owned.tmpdir("lpbh")
    project = copy_example(tmp)
    stack = owned.start(project)
    assert stack.daemon is not None
    daemon_pid = stack.daemon.pid
    http = direct_session(stack)
    tap = ProjectEventsTap(http)
    floor: list[float] = []
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

        async def one_run_save(n: int) -> float:
            nonlocal gen
            mark = len(tap.seen)
            t = time.perf_counter()
            touched.write_bytes(original + f"# bench run save {n} {time.time_ns()}\n".encode())
            run = await call(http, "POST", f"sessions/{session}/runs",
                             {"parts": [{"kind": "text", "text": "stream saved"}],
                              "changed_files": ["app/__init__.py"]}, want=202)
            ready = await tap.wait_for("ready", gen + 1, mark, 30)
            await tap.wait_run_end(run["run_id"], 30)
            gen += 1
            generations.append(gen)
            return ready - t

        async def one_save(n: int) -> tuple[float, float]:
            nonlocal gen
            mark = len(tap.seen)
            t = time.perf_counter()
            touched.write_bytes(original + f"# bench save {n} {time.time_ns()}\n".encode())
            stopping = await tap.wait_for("stopping", gen, mark, 30)
            ready = await tap.wait_for("ready", gen + 1, mark, 30)
            save_phases.append(tap.phases(mark, t))
            gen += 1
            generations.append(gen)
            return ready - t, stopping - t

        # Warm-up: the first spawn pays for cold page cache / pyc files, on both sides.
        floor_log = tmp / "floor-host.log"
        await floor_once(stack, owned, floor_log)
        await one_api()
        for i in range(cfg.restart_samples):
            order = (("floor", "api", "save", "watch") if i % 2 == 0
                     else ("watch", "save", "api", "floor"))
            for what in order:
                if what == "floor":
                    floor.append(await floor_once(stack, owned, floor_log))
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
        HOST_NOTES["restart_daemon_rss_mb"] = round(rss(daemon_pid) / MB, 1)
        HOST_NOTES["restart_daemon_cpu_s"] = round(cpu_of(daemon_pid), 2)
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
        "floor_sigterm_to_exit_ms": [round(x) for x in FLOOR_STOPS[1:]]}
    restart_part = [(s - d) * 1000 for s, d in zip(watch, detect)]
    watch_notes = {"watch_ms": [round(x * 1000) for x in watch],
                  "save_to_stopping_ms": [round(x * 1000) for x in detect],
                  "stopping_to_ready_ms": [round(x) for x in restart_part],
                  "watch_quiet_s": stack.settings.watch_quiet,
                  "phases_ms_after_save": save_phases,
                  "median_ms": breakdown(save_phases),
                  "explained": "edit->Ready = watchfiles step (20 ms) + quiet period "
                               "(LLAMON_PLAYGROUND_WATCH_QUIET, a deliberate debounce) + "
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


HOST_NOTES: dict[str, Any] = {}
FLOOR_STOPS: list[float] = []  # ms from SIGTERM to the exit of a directly spawned Host


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


# -- daemon_idle_cpu / daemon_rss --------------------------------------------------------------

def make_big_project(tmp: Path, files: int) -> Path:
    """The example plus `files` small .py files in nested folders (10 x 10 x files/100)."""
    project = copy_example(tmp, "big_project")
    root = project / "gen"
    for i in range(files):
        d = root / f"p{i // 1000:02d}" / f"q{(i // 100) % 10}"
        if i % 100 == 0:
            d.mkdir(parents=True, exist_ok=True)
            (d / "__init__.py").write_text("")
        (d / f"m{i:05d}.py").write_text(f"VALUE_{i} = {i}\n\n\ndef f_{i}() -> int:\n"
                                        f"    return VALUE_{i} * 2\n")
    return project


async def bench_daemon_idle(quick: bool, owned: Owned) -> list[Figure]:
    cfg = HostBenchConfig.make(quick)
    tmp = owned.tmpdir("lpbi")
    t0 = time.perf_counter()
    project = make_big_project(tmp, cfg.idle_files)
    watched = sum(1 for _ in project.rglob("*.py"))
    log(f"daemon_idle: wrote {watched:,} .py files in {time.perf_counter() - t0:.1f} s")
    stack = owned.start(project)
    assert stack.daemon is not None
    daemon_pid = stack.daemon.pid
    http = direct_session(stack)
    refs: list[Spawned] = []
    notes: dict[str, Any] = {"watched_py_files": watched, "idle_s": cfg.idle_s}
    try:
        notes["daemon_rss_mb_at_start"] = round(rss(daemon_pid) / MB, 1)
        t = time.perf_counter()
        status = await call(http, "POST", "host/start")
        notes["host_start_ms"] = round((time.perf_counter() - t) * 1000)
        if status["state"] != "ready":
            raise RuntimeError(f"the Host is not Ready: {status}")
        t = time.perf_counter()
        await call(http, "POST", "host/restart")
        notes["host_restart_ms_10k_files"] = round((time.perf_counter() - t) * 1000)
        session = await call(http, "POST", "sessions", {"title": "idle"}, 201)
        run_id = await start_run(http, session["id"], "stream hello before idling")
        async with http.get(f"{P}/runs/{run_id}/events") as resp:
            tail = (await resp.read())[-300:]
        if b'"status":"completed"' not in tail:
            raise RuntimeError(f"warm-up run did not complete: {tail!r}")
        host_pid = (await call(http, "GET", "host"))["pid"]
        await http.close()  # idle means idle: no client connection either
        await asyncio.sleep(cfg.settle_s)
        # References, started now so that they live through the same window.
        env = {k: v for k, v in os.environ.items()}
        secs = cfg.idle_s + 30
        refs.append(Spawned([sys.executable, "-c", f"import time; time.sleep({secs})"],
                            core.REPO, env))
        refs.append(Spawned([sys.executable, "-c",
                             f"import llamon_playground.daemon.app, time; print('ok', flush=True); "
                             f"time.sleep({secs})"], core.REPO, env))
        for ref in refs:
            owned.pids.add(ref.pid)
        await asyncio.sleep(0.7)  # the reference processes finish importing
        import psutil
        dproc = psutil.Process(daemon_pid)
        ctx0 = dproc.num_ctx_switches()
        c0 = {"daemon": cpu_of(daemon_pid), "host": cpu_of(host_pid),
              "sleeper": cpu_of(refs[0].pid)}
        w0 = time.perf_counter()
        with RssSampler({"daemon": daemon_pid}, interval=1.0) as sampler:
            await asyncio.sleep(cfg.idle_s)
        wall = time.perf_counter() - w0
        c1 = {"daemon": cpu_of(daemon_pid), "host": cpu_of(host_pid),
              "sleeper": cpu_of(refs[0].pid)}
        ctx1 = dproc.num_ctx_switches()
        used = {k: c1[k] - c0[k] for k in c0}
        pct = {k: 100 * v / wall for k, v in used.items()}
        notes.update({
            "window_s": round(wall, 2), "cpu_s": {k: round(v, 3) for k, v in used.items()},
            "host_cpu_pct": round(pct["host"], 2),
            "daemon_ctx_switches_per_s": round(
                (ctx1.voluntary + ctx1.involuntary - ctx0.voluntary - ctx0.involuntary) / wall,
                1),
            "daemon_threads": dproc.num_threads()})
        daemon_rss = rss(daemon_pid)
        floor_rss = rss(refs[1].pid)
        rss_notes = {"daemon_rss_mb_at_start": notes["daemon_rss_mb_at_start"],
                     "during_idle_mb": sampler.mb()["daemon"],
                     "restart_bench_daemon_rss_mb": HOST_NOTES.get("restart_daemon_rss_mb"),
                     "sleeper_rss_mb": round(rss(refs[0].pid) / MB, 1),
                     "host_rss_mb": round(rss(host_pid) / MB, 1) if host_pid else None}
        log(f"daemon_idle: daemon {pct['daemon']:.2f} % of a core over {wall:.0f} s "
            f"({used['daemon']:.2f} s CPU), Host {pct['host']:.2f} %, sleeper "
            f"{pct['sleeper']:.2f} %; daemon RSS {daemon_rss / MB:.1f} MB "
            f"(import floor {floor_rss / MB:.1f} MB)")
    finally:
        for ref in refs:
            ref.stop(grace=1.0)
        if not http.closed:
            await http.close()
        owned.close_stack(stack)
    return [
        Figure("daemon_idle_cpu", pct["daemon"], "% core", pct["sleeper"],
               "an idle `time.sleep` Python process, same window", Target("value", "<=", 1.0),
               notes),
        Figure("daemon_rss", daemon_rss / MB, "MB", floor_rss / MB,
               "Python that imported the daemon's app module and sleeps (code, no work)",
               Target("value", "<=", 80.0), rss_notes),
    ]


SECTIONS = (
    ("host_restart", bench_host_restart, ("host_restart",)),
    ("daemon_idle", bench_daemon_idle, ("daemon_idle_cpu", "daemon_rss")),
)
