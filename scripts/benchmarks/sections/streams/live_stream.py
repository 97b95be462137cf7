"""live_stream: one long run of N output.delta through the daemon and the front, against the
same Host streaming the same N chunks straight to a client (no daemon), in the same run.

  live_stream.cpu_per_delta   daemon + front CPU time per delivered delta (psutil)
  live_stream.rate            deltas/s delivered through the front  vs  straight from the Host
  live_stream.tail_rate       the rate over the last tenth of the run  vs  over the first tenth
"""

from __future__ import annotations

import asyncio
import statistics
import time
import uuid
from typing import Any

import aiohttp
import orjson

from scripts.benchmarks.clients.client import call, start_run
from scripts.benchmarks.clients.live_run import LiveRun, open_live
from scripts.benchmarks.clients.raw_http import open_sse
from scripts.benchmarks.figures import Figure, Target, log
from scripts.benchmarks.meters import cpu_of
from scripts.benchmarks.owned import Owned

FULL_DELTAS = 50_000
QUICK_DELTAS = 5_000
STREAM_TIMEOUT_S = 600


def tenth_rates(arrivals: list[float]) -> tuple[float, float]:
    """Deltas/s over the first and over the last tenth of the deltas (by arrival time)."""
    n = len(arrivals)
    k = max(n // 10, 2)
    first = (k - 1) / max(arrivals[k - 1] - arrivals[0], 1e-6)
    last = (k - 1) / max(arrivals[-1] - arrivals[-k], 1e-6)
    return first, last


async def straight_from_host(http: aiohttp.ClientSession, host_url: str,
                             deltas: int) -> tuple[int, float, list[float]]:
    """SendStreamingMessage `tokens N` to the Host itself: (chunks, seconds, arrivals)."""
    body = orjson.dumps({"jsonrpc": "2.0", "id": str(uuid.uuid4()),
                         "method": "SendStreamingMessage", "params": {"message": {
                             "messageId": str(uuid.uuid4()), "role": "ROLE_USER",
                             "parts": [{"text": f"tokens {deltas}"}]}}})
    headers = {"Content-Type": "application/json", "A2A-Version": "1.0",
               "Accept": "text/event-stream"}
    count, arrivals, tail = 0, [], b""
    t0 = time.perf_counter()
    async with http.post(host_url.rstrip("/") + "/", data=body, headers=headers,
                         timeout=aiohttp.ClientTimeout(total=STREAM_TIMEOUT_S)) as resp:
        if resp.status != 200:
            raise RuntimeError(f"the Host answered {resp.status}: {await resp.text()}")
        async for chunk in resp.content.iter_any():
            now = time.perf_counter()
            buf = tail + chunk
            found = buf.count(b'"artifactUpdate"')
            count += found
            arrivals.extend([now] * found)
            tail = buf[-20:]
    return count, time.perf_counter() - t0, arrivals


async def through_front(live: LiveRun, deltas: int
                        ) -> tuple[int, float, list[float], dict[str, float]]:
    """A run of `tokens N` read on the front: (deltas, seconds, arrivals, CPU seconds)."""
    pids = [live.pids["daemon"], live.pids.get("front", 0)]
    c0 = [cpu_of(p) for p in pids]
    t0 = time.perf_counter()
    run_id = await start_run(live.direct, live.session_id, f"tokens {deltas}")
    reader = await open_sse(live.target, run_id, timed=True)
    await asyncio.wait_for(reader.closed, STREAM_TIMEOUT_S)
    elapsed = time.perf_counter() - t0
    c1 = [cpu_of(p) for p in pids]
    if not reader.frames.ended_terminal:
        raise RuntimeError(f"the run did not end: {reader.frames.last_frame[:200]!r}")
    arrivals = [t for _, kind, t, _ in reader.frames.timed_frames() if kind == "output.delta"]
    cpu = {"daemon_s": c1[0] - c0[0], "front_s": c1[1] - c0[1]}
    return len(arrivals), elapsed, arrivals, cpu


async def bench_live_stream(quick: bool, owned: Owned) -> list[Figure]:
    deltas = QUICK_DELTAS if quick else FULL_DELTAS
    reps = 2 if quick else 3
    live = await open_live(owned, "lpls", 0)
    rates: dict[str, list[float]] = {"front": [], "host": []}
    cpu_us: list[float] = []
    tails: list[tuple[float, float]] = []
    per_rep: list[dict[str, Any]] = []
    try:
        host = await call(live.direct, "GET", "host")
        host_pid = live.pids["host"]
        async with aiohttp.ClientSession() as http:
            await straight_from_host(http, host["url"], 100)  # warm-up: imports, connections
            await through_front(live, 100)
            for rep in range(reps):
                for way in (("front", "host") if rep % 2 == 0 else ("host", "front")):
                    h0 = cpu_of(host_pid)
                    if way == "host":
                        n, elapsed, arrivals = await straight_from_host(http, host["url"],
                                                                        deltas)
                        cpu: dict[str, float] = {}
                    else:
                        n, elapsed, arrivals, cpu = await through_front(live, deltas)
                        cpu_us.append((cpu["daemon_s"] + cpu["front_s"]) / n * 1e6)
                        tails.append(tenth_rates(arrivals))
                    if n != deltas:
                        raise RuntimeError(f"{way}: {n} deltas arrived, want {deltas}")
                    rates[way].append(n / elapsed)
                    per_rep.append({"way": way, "rate": round(n / elapsed),
                                    "host_cpu_us": round((cpu_of(host_pid) - h0) / n * 1e6),
                                    **{k: round(v / n * 1e6) for k, v in cpu.items()},
                                    "first_last_tenth": [round(r) for r in
                                                         tenth_rates(arrivals)]})
                log(f"live_stream rep {rep + 1}: front {rates['front'][-1]:,.0f}/s "
                    f"({cpu_us[-1]:.0f} us daemon+front a delta), host straight "
                    f"{rates['host'][-1]:,.0f}/s")
    finally:
        await live.close(owned)
    notes = {"deltas": deltas, "reps": reps, "via": live.via, "per_rep": per_rep}
    first, last = (statistics.median(t[0] for t in tails), statistics.median(t[1] for t in tails))
    return [
        Figure("live_stream.cpu_per_delta", statistics.median(cpu_us), "us", None,
               "daemon + front CPU time per delivered output.delta", Target("value", "<=", 50.0),
               notes),
        Figure("live_stream.rate", statistics.median(rates["front"]), "deltas/s",
               statistics.median(rates["host"]), "the same Host streaming straight to a client",
               Target("ratio", ">=", 0.9)),
        Figure("live_stream.tail_rate", last, "deltas/s", first,
               "the rate over the first tenth of the same run", Target("ratio", ">=", 0.9)),
    ]
