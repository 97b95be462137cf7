"""suite: suite runs against what a client does by hand, on one daemon with the example Host.

  suite.run_50        a 50-case suite of `stream` inputs, POST to its last event  vs  the
                      same 50 reruns sent one after another by a client that waits for each
                      end (ratio <= 1.1)
  suite.repeat_50x3   the same suite with `repeat: 3` (150 runs), POST to its last event  vs
                      its 150 runs sent one after another through the API, each awaited
                      to its end (ratio <= 1.05)
  suite.report_200    GET of a 200-case suite run's report, p99 (<= 100 ms)  vs  GET of one
                      run, p99
  suite.on_save_10    a save to a 10-case run-on-save report complete  vs  the same kind of
                      save to the Host's warm restart being Ready, then the same 10 runs one
                      after another (ratio <= 1.1): both pay the watcher's quiet period
"""

from __future__ import annotations

import asyncio
import statistics
import time
from typing import Any

import aiohttp

from llamon_playground.common.contract import API_PREFIX
from scripts.benchmarks.clients.client import call, direct_session
from scripts.benchmarks.figures import Figure, Target, log, pct
from scripts.benchmarks.owned import Owned
from scripts.benchmarks.sections.host.host_restart_warm import REPORT_WAIT_S

STREAM = "stream suite bench"
# Each timed save is written this long after the previous write: a sooner one would continue
# that write's burst, whose quiet period has grown (up to WATCH_QUIET_MAX, 0.5 s).
SAVE_GAP_S = 0.6


async def _to_end(http: aiohttp.ClientSession, path: str) -> None:
    """Read an SSE route until the daemon ends it."""
    async with http.get(f"{API_PREFIX}/{path}", timeout=aiohttp.ClientTimeout(total=600)) as r:
        async for _ in r.content.iter_any():
            pass


async def _rerun(http: aiohttp.ClientSession, run_id: str) -> None:
    accepted = await call(http, "POST", f"runs/{run_id}/rerun", None, want=202)
    await _to_end(http, f"runs/{accepted['run_id']}/events")


async def _suite_run(http: aiohttp.ClientSession, suite_id: str, repeat: int = 1) -> str:
    body = {"repeat": repeat} if repeat > 1 else None
    started = await call(http, "POST", f"suites/{suite_id}/runs", body, want=202)
    await _to_end(http, f"suite-runs/{started['suite_run_id']}/events")
    return str(started["suite_run_id"])


async def _suite(http: aiohttp.ClientSession, name: str, run_id: str, cases: int,
                 on_save: bool = False) -> str:
    body = {"name": name, "cases": [{"run_id": run_id}] * cases, "run_on_save": on_save}
    return str((await call(http, "POST", "suites", body, want=201))["id"])


async def bench_suite(quick: bool, owned: Owned) -> list[Figure]:
    stack = owned.start(owned.project("lpsu"), {"LLAMON_PLAYGROUND_WATCH_QUIET": "0.05"})
    http = direct_session(stack)
    figures: list[Figure] = []
    try:
        session = (await call(http, "POST", "sessions", {}, want=201))["id"]
        source = await call(http, "POST", f"sessions/{session}/runs",
                            {"parts": [{"kind": "text", "text": STREAM}]}, want=202)
        run_id = source["run_id"]
        await _to_end(http, f"runs/{run_id}/events")
        figures.append(await _run_50(http, run_id, 10 if quick else 50, 2 if quick else 3))
        figures.append(await _run_50(http, run_id, 10 if quick else 50, 2 if quick else 3,
                                     repeat=3))
        figures.append(await _report_200(http, run_id, 50 if quick else 200,
                                         30 if quick else 200))
        figures.append(await _on_save(http, stack.project, run_id, 2 if quick else 5))
    finally:
        await http.close()
        owned.close_stack(stack)
    return figures


async def _run_50(http: aiohttp.ClientSession, run_id: str, cases: int,
                  rounds: int, repeat: int = 1) -> Figure:
    """A suite of `cases` run `repeat` times each, against as many reruns by hand."""
    name = f"suite.run_{cases}" if repeat == 1 else f"suite.repeat_{cases}x{repeat}"
    suite_id = await _suite(http, f"run {cases}x{repeat}", run_id, cases)
    suite_s, manual_s = [], []
    for i in range(rounds):
        order = ("suite", "manual") if i % 2 == 0 else ("manual", "suite")
        for what in order:
            t = time.perf_counter()
            if what == "suite":
                await _suite_run(http, suite_id, repeat)
                suite_s.append(time.perf_counter() - t)
            else:
                for _ in range(cases * repeat):
                    await _rerun(http, run_id)
                manual_s.append(time.perf_counter() - t)
        log(f"{name} {i + 1}: suite {suite_s[-1]:.2f} s, reruns {manual_s[-1]:.2f} s")
    return Figure(name, statistics.median(suite_s), "s",
                  statistics.median(manual_s),
                  f"{cases * repeat} reruns, each awaited to its end",
                  Target("ratio", "<=", 1.1 if repeat == 1 else 1.05),
                  {"suite_s": [round(x, 3) for x in suite_s],
                   "reruns_s": [round(x, 3) for x in manual_s]})


async def _report_200(http: aiohttp.ClientSession, run_id: str, cases: int,
                      samples: int) -> Figure:
    suite_id = await _suite(http, f"report {cases}", run_id, cases)
    suite_run_id = await _suite_run(http, suite_id)
    report: Any = await call(http, "GET", f"suite-runs/{suite_run_id}")
    if report["summary"]["done"] != cases:
        raise RuntimeError(f"the {cases}-case suite run did not finish: {report['summary']}")
    report_ms, run_ms = [], []
    for _ in range(samples):
        t = time.perf_counter()
        await call(http, "GET", f"suite-runs/{suite_run_id}")
        report_ms.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        await call(http, "GET", f"runs/{run_id}")
        run_ms.append((time.perf_counter() - t) * 1000)
    return Figure(f"suite.report_{cases}", pct(report_ms, 99), "ms", pct(run_ms, 99),
                  "GET of one run, p99", Target("value", "<=", 100),
                  {"samples": samples, "report_p50_ms": round(pct(report_ms, 50), 2)})


async def _on_save(http: aiohttp.ClientSession, project: Any, run_id: str,
                   rounds: int) -> Figure:
    cases = 10
    suite_id = await _suite(http, "on save", run_id, cases, on_save=True)
    touched = project / "app" / "__init__.py"
    original = touched.read_bytes()
    saved_s, manual_s, started_s = [], [], []
    # Warm-up, as host_restart_warm does: the warm parent preloads what the first generation
    # reported importing (after 1 s and 5 s), so both sides restart warm.
    await asyncio.sleep(REPORT_WAIT_S)
    await call(http, "POST", "host/restart")
    try:
        for i in range(-1, rounds):
            before = len((await call(http, "GET", f"suites/{suite_id}/runs"))["suite_runs"])
            await asyncio.sleep(SAVE_GAP_S)
            t = time.perf_counter()
            touched.write_bytes(original + f"# bench save {i} {time.time_ns()}\n".encode())
            suite_run_id = await _new_suite_run(http, suite_id, before)
            started_s.append(time.perf_counter() - t)
            await _to_end(http, f"suite-runs/{suite_run_id}/events")
            saved_s.append(time.perf_counter() - t)
            # The baseline: the same kind of save restarts the Host (the suite not on save
            # meanwhile), then the 10 runs, one after another.
            await call(http, "PATCH", f"suites/{suite_id}", {"run_on_save": False})
            gen = (await call(http, "GET", "host"))["generation"]
            await asyncio.sleep(SAVE_GAP_S)
            t = time.perf_counter()
            touched.write_bytes(original + f"# bench base {i} {time.time_ns()}\n".encode())
            await _new_generation(http, gen)
            for _ in range(cases):
                await _rerun(http, run_id)
            manual_s.append(time.perf_counter() - t)
            await call(http, "PATCH", f"suites/{suite_id}", {"run_on_save": True})
            if i < 0:  # the warm-up round
                saved_s.pop()
                manual_s.pop()
                started_s.pop()
                continue
            log(f"suite.on_save_{cases} {i + 1}: save->report {saved_s[-1]:.2f} s (started "
                f"after {started_s[-1]:.2f} s), "
                f"restart+runs {manual_s[-1]:.2f} s")
    finally:
        touched.write_bytes(original)
    return Figure(f"suite.on_save_{cases}", statistics.median(saved_s), "s",
                  statistics.median(manual_s),
                  f"a save's warm restart to Ready, then {cases} runs one after another",
                  Target("ratio", "<=", 1.1),
                  {"save_s": [round(x, 3) for x in saved_s],
                   "save_to_start_s": [round(x, 3) for x in started_s],
                   "restart_and_runs_s": [round(x, 3) for x in manual_s]})


async def _new_generation(http: aiohttp.ClientSession, after: int) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        host = await call(http, "GET", "host")
        if host["state"] == "ready" and (host["generation"] or 0) > after:
            return
        await asyncio.sleep(0.005)
    raise RuntimeError("the save restarted no Host")


async def _new_suite_run(http: aiohttp.ClientSession, suite_id: str, before: int) -> str:
    """The run-on-save suite run the save started (polled: it appears within the watcher's
    quiet period and a restart)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        runs = (await call(http, "GET", f"suites/{suite_id}/runs"))["suite_runs"]
        if len(runs) > before:
            return str(runs[0]["id"])
        await asyncio.sleep(0.005)
    raise RuntimeError("no suite run started on save")
