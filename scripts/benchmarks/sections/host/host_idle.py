"""The daemon at rest, on a project with 10,000 watched .py files and a Ready Host:

  daemon_idle_cpu       daemon CPU (% of one core) while idle  vs  an idle `time.sleep` Python
                        process over the same window
  daemon_rss            that daemon's RSS afterwards  vs  a Python process that imported the
                        daemon's code (llamon_playground.daemon.app) and sleeps
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from typing import Any

import psutil

from scripts.benchmarks.clients.client import COMPLETED, P, call, direct_session, start_run
from scripts.benchmarks.configs import HostConfig
from scripts.benchmarks.figures import Figure, Target, log
from scripts.benchmarks.inputs.fixtures import make_big_project
from scripts.benchmarks.meters import MB, RssSampler, cpu_of, rss
from scripts.benchmarks.owned import Owned
from scripts.benchmarks.stack import REPO, Proc


async def bench_daemon_idle(quick: bool, owned: Owned) -> list[Figure]:
    cfg = HostConfig.make(quick)
    tmp = owned.tmpdir("lpbi")
    t0 = time.perf_counter()
    project = make_big_project(tmp, cfg.idle_files)
    watched = sum(1 for _ in project.rglob("*.py"))
    log(f"daemon_idle: wrote {watched:,} .py files in {time.perf_counter() - t0:.1f} s")
    stack = owned.start(project)
    assert stack.daemon is not None
    daemon_pid = stack.daemon.pid
    http = direct_session(stack)
    refs: list[Proc] = []
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
        if COMPLETED not in tail:
            raise RuntimeError(f"warm-up run did not complete: {tail!r}")
        host_pid = (await call(http, "GET", "host"))["pid"]
        await http.close()  # idle means idle: no client connection either
        await asyncio.sleep(cfg.settle_s)
        # References, started now so that they live through the same window.
        env = {k: v for k, v in os.environ.items()}
        secs = cfg.idle_s + 30
        refs.append(Proc([sys.executable, "-c", f"import time; time.sleep({secs})"], env, None,
                         REPO))
        refs.append(Proc([sys.executable, "-c",
                          (f"import llamon_playground.daemon.app, time; print('ok', flush=True); "
                          f"time.sleep({secs})")], env, None, REPO))
        for ref in refs:
            owned.pids.add(ref.pid)
        await asyncio.sleep(0.7)  # the reference processes finish importing
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
                     "restart_bench_daemon_rss_mb": owned.notes.get("restart_daemon_rss_mb"),
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
