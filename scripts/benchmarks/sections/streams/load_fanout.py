"""sse_fanout_200: 200 SSE clients on one streaming run through the front.

Delivered events/s (all clients)  vs  1 client's events/s x 200 (the ideal); every client must
get every event once, in order (checked, else the section fails).
"""

from __future__ import annotations

import asyncio
import statistics
import time
from typing import Any

from scripts.benchmarks.clients.client import call, start_run
from scripts.benchmarks.clients.live_run import LiveRun, close_readers, open_live, read_truth
from scripts.benchmarks.clients.raw_http import SseReader, check_ids, open_sse
from scripts.benchmarks.configs import LoadConfig
from scripts.benchmarks.figures import Figure, log, pct
from scripts.benchmarks.inputs.fixtures import stream_text
from scripts.benchmarks.meters import CpuMeter, RssSampler
from scripts.benchmarks.owned import Owned


async def fanout_once(live: LiveRun, cfg: LoadConfig, n: int, words: int) -> dict[str, Any]:
    readers: list[SseReader] = []
    try:
        with CpuMeter(live.pids) as cpu, RssSampler(live.pids, 0.1) as mem:
            t0 = time.perf_counter()
            run_id = await start_run(live.direct, live.session_id, stream_text(words))
            observer = await open_sse(live.observer, run_id)
            readers.append(observer)
            clients: list[SseReader] = []
            for i in range(0, n, cfg.connect_wave):
                wave = await asyncio.gather(*(open_sse(live.target, run_id)
                                              for _ in range(min(cfg.connect_wave, n - i))))
                readers.extend(wave)
                clients.extend(wave)
                await asyncio.wait_for(asyncio.gather(*(c.headed for c in wave)), 30)
            t_connected = time.perf_counter()
            timeout = 60 + words * max(cfg.fanout_delay_ms, 1) / 1000 * 10
            await asyncio.wait_for(asyncio.gather(*(r.closed for r in readers)), timeout)
    finally:
        close_readers(readers)
    want = await read_truth(live, run_id)
    check_ids("observer (daemon socket)", observer.seqs, want)
    for i, c in enumerate(clients):
        if c.status != 200 or c.error:
            raise RuntimeError(f"client {i}: {c.error or c.status}")
        check_ids(f"fan-out client {i} of {n}", c.seqs, want)
        if not c.frames.ended_terminal:
            raise RuntimeError(f"client {i} did not end on the terminal run.status")
    total = sum(len(c.seqs) for c in clients)
    ends = [c.frames.t_last for c in clients if c.frames.t_last is not None]
    window = max(ends) - t0
    assert observer.frames.t_last is not None
    lags = [(t - observer.frames.t_last) * 1000 for t in ends]
    # How well the clients kept up with the run as it went, whatever the run's own pace:
    # 1.0 = the last client finished when the observer on the daemon socket did.
    kept_pace = (observer.frames.t_last - t0) / window
    run = await call(live.direct, "GET", f"runs/{run_id}")
    if run["status"] != "completed":
        raise RuntimeError(f"run {run_id} ended {run['status']}")
    return {"clients": n, "events_per_client": len(want), "delivered": total,
            "rate": total / window, "window_s": round(window, 3),
            "kept_pace_with_observer": round(kept_pace, 3),
            "connect_all_s": round(t_connected - t0, 3), "run_duration_ms": run["duration_ms"],
            "lag_after_observer_ms": {"p50": round(pct(lags, 50), 1),
                                      "p99": round(pct(lags, 99), 1),
                                      "max": round(max(lags), 1)},
            "cpu_pct": cpu.pct(), "rss_mb": mem.mb()}


async def bench_sse_fanout(quick: bool, owned: Owned) -> list[Figure]:
    cfg = LoadConfig.make(quick)
    n = cfg.fanout_clients
    live = await open_live(owned, "lpbf", cfg.fanout_delay_ms)
    results: dict[int, list[dict[str, Any]]] = {1: [], n: []}
    try:
        await fanout_once(live, cfg, 1, 200)  # warm-up: first stream of this Host
        for rep in range(cfg.fanout_reps):
            for k in ((n, 1) if rep % 2 == 0 else (1, n)):
                r = await fanout_once(live, cfg, k, cfg.fanout_words)
                results[k].append(r)
                log(f"sse_fanout {k:>3} client(s): {r['rate']:,.0f} events/s delivered, "
                    f"window {r['window_s']:.2f} s, run {r['run_duration_ms']:.0f} ms, "
                    f"lag p99 {r['lag_after_observer_ms']['p99']} ms, cpu {r['cpu_pct']}")
    finally:
        await live.close(owned)

    def med(k: int, fn: Any) -> float | None:
        values = [fn(r) for r in results[k]]
        values = [v for v in values if v is not None]
        return statistics.median(values) if values else None

    rate_n, rate_1 = med(n, lambda r: r["rate"]), med(1, lambda r: r["rate"])
    assert rate_n is not None and rate_1 is not None
    notes = {"via": live.via, "words": cfg.fanout_words, "chunk_delay_ms": cfg.fanout_delay_ms,
             "reps": cfg.fanout_reps,
             "meaning": f"ratio = delivered / ({n} x one lone client's rate); 1.0 means every "
                        f"one of {n} clients keeps the pace a lone client gets",
             "runs": results}
    fig = [Figure(f"sse_fanout_{n}", rate_n, "events/s", rate_1 * n,
                  f"1 client's events/s x {n} (ideal)", None, notes)]  # report only: no target set
    base = "same run with 1 client"
    fig.append(Figure(f"sse_fanout_{n}.run_duration", med(n, lambda r: r["run_duration_ms"]),
                      "ms", med(1, lambda r: r["run_duration_ms"]), base, None,
                      {"what": "the run's own duration (run detail duration_ms): how much the "
                               "load slowed the Host -> daemon side"}))
    fig.append(Figure(f"sse_fanout_{n}.lag_p99",
                      med(n, lambda r: r["lag_after_observer_ms"]["p99"]), "ms",
                      med(1, lambda r: r["lag_after_observer_ms"]["p99"]), base, None,
                      {"what": "p99 over clients of (its last event's arrival - the arrival at "
                               "an observer on the daemon socket)"}))
    for who in ("daemon", "front"):
        if who not in live.pids:
            continue
        fig.append(Figure(f"sse_fanout_{n}.{who}_cpu",
                          med(n, lambda r, who=who: r["cpu_pct"][who]), "% core",
                          med(1, lambda r, who=who: r["cpu_pct"][who]), base, None))
        fig.append(Figure(f"sse_fanout_{n}.{who}_rss_peak",
                          med(n, lambda r, who=who: r["rss_mb"][who]["peak"]), "MB",
                          med(1, lambda r, who=who: r["rss_mb"][who]["peak"]), base, None))
    return fig
