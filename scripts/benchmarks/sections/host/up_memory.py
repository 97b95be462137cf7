"""What a developer leaves running: the real `llamon-playground up` on the bundled example,
started as a person starts it (the Host prewarmed, the token read from what `up` prints),
and the PSS of every process it leaves (`up`, which serves the front, its daemon, the
Host's reaper, the warm parent and the Host: the whole process tree), summed:

  up_pss_idle           the tree's PSS at rest, the Host Ready  vs  a Python process that
                        imported nothing and sleeps, once per process of the tree
  up_pss_after_runs     the same after 1,000 runs through the front (a new session every
                        10)  vs  the idle figure of the same tree
  up_pss_soak           with LLAMON_BENCH_UP_SOAK_RUNS=N (e.g. 10000): after N runs, and
                        whether it stayed flat after the first 1,000  vs  the 1,000 figure

PSS (proportional set size) splits a page shared by k processes k ways, so the sum is what
the tree costs the machine: the interpreter's and libraries' pages once, each heap whole.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import time
from typing import Any

import aiohttp
import psutil

from llamon_playground.cli.daemon_fork import PROCESS_NAME
from llamon_playground.harness.waiting import wait_for
from scripts.benchmarks.clients.client import COMPLETED, call, count_sse, start_run
from scripts.benchmarks.figures import Figure, Target, log
from scripts.benchmarks.meters import MB
from scripts.benchmarks.owned import Owned
from scripts.benchmarks.stack import REPO, Proc, process_tree

SOAK_ENV = "LLAMON_BENCH_UP_SOAK_RUNS"
RUNS = 1000
QUICK_RUNS = 200
RUNS_PER_SESSION = 10
SETTLE_S = 5.0  # after the Host is Ready, or after the last run, before PSS is read
SAMPLES = 3  # PSS read this many times, a second apart: the median
FLAT_MB = 5.0  # the soak's growth after the first 1,000 runs that still counts as flat
IDLE_TARGET_MB = 90.0
RUNS_TARGET_MB = 130.0


def role(proc: psutil.Process) -> str:
    """Which part of what `up` leaves a process is, by its command line."""
    argv = " ".join(proc.cmdline())
    if proc.name() == PROCESS_NAME.decode():  # forked by `up`: its command line is `up`'s
        return "daemon"
    if " up " in f"{argv} ":
        return "up (front)"
    if "host_manager.lifeline" in argv:
        return "reaper"
    if "preloader.py" in argv:
        parent = proc.parent()
        forked = parent is not None and "preloader.py" in " ".join(parent.cmdline())
        return "host" if forked else "warm parent"
    if " daemon " in f"{argv} ":
        return "daemon"
    if " front " in f"{argv} ":
        return "front"  # a front process of its own (`up` serves its front itself)
    return "host"


def tree_pss(root: int) -> dict[str, Any]:
    """PSS in MB of each process of the tree under `root`, by role, and their sum."""
    by_role: dict[str, float] = {}
    count = 0
    for proc in process_tree(root):
        try:
            name = role(proc)
            pss = proc.memory_full_info().pss / MB
        except psutil.Error:
            continue
        by_role[name] = round(by_role.get(name, 0.0) + pss, 1)
        count += 1
    return {"total": round(sum(by_role.values()), 1), "processes": count, "by_role": by_role}


async def median_pss(root: int) -> dict[str, Any]:
    samples = []
    for i in range(SAMPLES):
        if i:
            await asyncio.sleep(1.0)
        samples.append(tree_pss(root))
    mid = statistics.median(s["total"] for s in samples)
    return next(s for s in samples if s["total"] == mid)


async def sleeper_pss(secs: float) -> tuple[float, Proc]:
    """A Python process that imported nothing and sleeps, and its PSS (MB)."""
    ref = Proc([sys.executable, "-c", f"import time; time.sleep({secs})"], dict(os.environ),
               None, REPO)
    await asyncio.sleep(0.5)
    return psutil.Process(ref.pid).memory_full_info().pss / MB, ref


def link_of(up: Proc) -> tuple[str, str] | None:
    """(base URL, token) from the line `up` prints for a person to open."""
    for line in up.output().splitlines():
        if line.startswith("open in a browser: "):
            url = line.split("open in a browser: ")[1].strip()
            base, _, token = url.partition("/?token=")
            return base, token
    if up.popen.poll() is not None:
        raise RuntimeError(f"`up` ended early:\n{up.output()}")
    return None


async def run_many(http: aiohttp.ClientSession, n: int) -> float:
    """`n` runs through the front, one after another; the seconds they took."""
    t0 = time.perf_counter()
    session_id = ""
    for i in range(n):
        if i % RUNS_PER_SESSION == 0:
            session_id = (await call(http, "POST", "sessions", {"title": f"soak {i}"},
                                     201))["id"]
        run_id = await start_run(http, session_id, f"hello {i}")
        _, tail, _ = await count_sse(http, run_id)
        if COMPLETED not in tail:
            raise RuntimeError(f"run {i} did not complete: {tail!r}")
    return time.perf_counter() - t0


async def bench_up_memory(quick: bool, owned: Owned) -> list[Figure]:
    project = owned.project("lpum")
    runtime = owned.tmpdir("lpumr")
    # As a person runs it: no test switches (the Host starts with the daemon), no token given.
    env = {k: v for k, v in os.environ.items() if not k.startswith("LLAMON_PLAYGROUND_")}
    env["LLAMON_PLAYGROUND_RUNTIME_DIR"] = str(runtime)
    up = Proc([sys.executable, "-m", "llamon_playground", "up", str(project), "--port", "0"],
              env, runtime / "up.log", REPO)
    owned.pids.add(up.pid)
    runs = QUICK_RUNS if quick else RUNS
    soak = int(os.environ.get(SOAK_ENV, "0") or 0)
    notes: dict[str, Any] = {"runs": runs}
    refs: list[Proc] = []
    try:
        base, token = await asyncio.to_thread(wait_for, lambda: link_of(up), 60,
                                              "the link `up` prints")
        headers = {"Authorization": f"Bearer {token}"}
        async with aiohttp.ClientSession(base_url=base, headers=headers) as http:
            deadline = time.monotonic() + 60
            while (await call(http, "GET", "host"))["state"] != "ready":
                if time.monotonic() > deadline:
                    raise RuntimeError("the prewarmed Host never became Ready")
                await asyncio.sleep(0.2)
        await asyncio.sleep(SETTLE_S)
        idle = await median_pss(up.pid)
        floor, ref = await sleeper_pss(600)
        refs.append(ref)
        notes.update({"idle_by_role_mb": idle["by_role"], "idle_processes": idle["processes"],
                      "bare_python_pss_mb": round(floor, 1)})
        log(f"up_memory: idle {idle['total']:.1f} MB PSS over {idle['processes']} processes "
            f"{idle['by_role']}")
        async with aiohttp.ClientSession(base_url=base, headers=headers) as http:
            notes["runs_s"] = round(await run_many(http, runs), 1)
        await asyncio.sleep(SETTLE_S)
        after = await median_pss(up.pid)
        notes["after_runs_by_role_mb"] = after["by_role"]
        log(f"up_memory: after {runs} runs {after['total']:.1f} MB PSS {after['by_role']}")
        figures = [
            Figure("up_pss_idle", idle["total"], "MB", floor * idle["processes"],
                   "a Python process that imported nothing and sleeps, once per process "
                   "of the tree", Target("value", "<=", IDLE_TARGET_MB), notes),
            Figure("up_pss_after_runs", after["total"], "MB", idle["total"],
                   f"the same tree idle, before its {runs:,} runs",
                   Target("value", "<=", RUNS_TARGET_MB), {"runs": runs}),
        ]
        if soak > runs:
            figures.append(await _soak(up.pid, base, headers, runs, soak, after["total"]))
    finally:
        for ref in refs:
            ref.stop(grace=1.0)
        up.stop(grace=30.0)  # SIGTERM: `up` stops the daemon it started, and its Host
    return figures


async def _soak(root: int, base: str, headers: dict[str, str], done: int, total: int,
                at_first: float) -> Figure:
    """Runs on to `total` in thousands, the tree's PSS after each; flat when the last is
    within FLAT_MB of the figure after the first thousand."""
    marks: dict[int, float] = {done: at_first}
    by_role: dict[int, dict[str, float]] = {}
    async with aiohttp.ClientSession(base_url=base, headers=headers) as http:
        while done < total:
            step = min(1000, total - done)
            await run_many(http, step)
            done += step
            now = await median_pss(root)
            marks[done], by_role[done] = now["total"], now["by_role"]
            log(f"up_memory: soak {done:,} runs: {marks[done]:.1f} MB PSS {now['by_role']}")
    await asyncio.sleep(SETTLE_S)
    last = (await median_pss(root))["total"]
    return Figure("up_pss_soak", last, "MB", at_first,
                  f"the same tree after its first {min(marks):,} runs",
                  Target("margin", "<=", FLAT_MB),
                  {"runs": total, "pss_mb_by_runs": marks, "by_role_mb_by_runs": by_role,
                   "flat": last - at_first <= FLAT_MB})
