"""The first run after start, on the daemon's socket:

  first_run   create -> done of a daemon's first run (a one-token answer), the Host started
              with the daemon (prewarm, the default)  vs  the same first run with the Host
              started on demand (LLAMON_PLAYGROUND_PREWARM=0), daemons started alternately

The prewarmed daemon's first run is sent once its /health says the Host is Ready (a developer
opens the page and types first); /health opens no history, so a daemon that is never used
has none.
"""

from __future__ import annotations

import asyncio
import time

from scripts.benchmarks.client import COMPLETED, call, count_sse, direct_session, start_run
from scripts.benchmarks.figures import Figure, Target, log, pct
from scripts.benchmarks.owned import Owned
from scripts.benchmarks.sections.run_path import ONE_TOKEN

READY_WAIT_S = 30.0


async def _first_run(owned: Owned, prewarm: bool) -> float:
    stack = owned.start(owned.project("lpfr"),
                        extra_env={"LLAMON_PLAYGROUND_PREWARM": "1" if prewarm else "0"})
    try:
        async with direct_session(stack) as http:
            deadline = time.monotonic() + READY_WAIT_S
            while prewarm:
                health = await call(http, "GET", "/health")
                if health["database"] != "not_opened":
                    raise RuntimeError(f"a prewarm opened history: {health['database']}")
                if health["host"]["state"] == "ready":
                    break
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the prewarmed Host is not Ready: {health['host']}")
                await _pause()
            session = await call(http, "POST", "sessions", {"title": "first"}, want=201)
            t0 = time.perf_counter()
            run_id = await start_run(http, session["id"], ONE_TOKEN)
            _, last, _ = await count_sse(http, run_id)
            elapsed = (time.perf_counter() - t0) * 1000
            if COMPLETED not in last:
                raise RuntimeError(f"the first run did not complete: {last[-200:]!r}")
            return elapsed
    finally:
        owned.close_stack(stack)


async def _pause() -> None:
    await asyncio.sleep(0.02)  # a poll of /health, the way a page would find the Host Ready


async def bench_first_run(quick: bool, owned: Owned) -> list[Figure]:
    """See the module docstring."""
    reps = 3 if quick else 5
    warm: list[float] = []
    cold: list[float] = []
    for i in range(reps):
        for prewarm in ((True, False) if i % 2 == 0 else (False, True)):
            (warm if prewarm else cold).append(await _first_run(owned, prewarm))
    log(f"first_run: prewarmed p50 {pct(warm, 50):.0f} ms, on demand p50 {pct(cold, 50):.0f} "
        f"ms ({reps} daemons each)")
    return [Figure("first_run.create_to_done_p50", pct(warm, 50), "ms", pct(cold, 50),
                   "the same first run, the Host started on demand (prewarm off), same run",
                   Target("value", "<=", 150.0),
                   {"prewarmed_ms": warm, "on_demand_ms": cold})]
