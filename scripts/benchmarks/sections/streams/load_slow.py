"""slow_client: a fast run with 5 normal SSE clients and one that reads one event per second
through a tiny receive buffer  vs  the same run without the slow client.
"""

from __future__ import annotations

import asyncio
import socket
import statistics
import threading
import time
from typing import Any

from scripts.benchmarks.clients.client import call, start_run
from scripts.benchmarks.clients.live_run import LiveRun, close_readers, open_live, read_truth
from scripts.benchmarks.clients.raw_http import (
    SseReader,
    SseTarget,
    check_ids,
    open_sse,
    read_sse_answer,
    sse_request,
)
from scripts.benchmarks.configs import LoadConfig
from scripts.benchmarks.figures import Figure, Target, log
from scripts.benchmarks.inputs.fixtures import stream_text
from scripts.benchmarks.meters import CpuMeter, RssSampler
from scripts.benchmarks.owned import Owned


def slow_reader(target: SseTarget, request: bytes, rcvbuf: int, slow_s: float,
                run_done: threading.Event, out: dict[str, Any]) -> None:
    """A client that reads about one event per second through a tiny receive buffer for
    `slow_s` seconds, then (once the run is over) reads everything that is left, fast."""
    try:
        family = socket.AF_INET if target.kind == "tcp" else socket.AF_UNIX
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
            out["rcvbuf"] = sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF)
            sock.settimeout(30)
            sock.connect(("127.0.0.1", target.where) if target.kind == "tcp" else target.where)
            sock.sendall(request)
            raw = bytearray()
            t0 = time.monotonic()
            frames = 0
            while time.monotonic() - t0 < slow_s:
                inner = time.monotonic() + 5
                while raw.count(b"\n\n") <= frames and time.monotonic() < inner:
                    data = sock.recv(64)
                    if not data:
                        break
                    raw += data
                frames = raw.count(b"\n\n")
                time.sleep(1.0)
            out["slow_frames"] = frames
            out["slow_bytes"] = len(raw)
            out["run_done_before_fast_read"] = run_done.wait(timeout=120)
            t1 = time.monotonic()
            while True:
                data = sock.recv(1 << 16)
                if not data:
                    break
                raw += data
                if time.monotonic() - t1 > 60:
                    raise TimeoutError("the slow client's catch-up took over 60 s")
            out["catch_up_s"] = round(time.monotonic() - t1, 3)
            out["raw"] = bytes(raw)
        finally:
            sock.close()
    except Exception as exc:  # noqa: BLE001 (reported by the caller)
        out["error"] = f"{type(exc).__name__}: {exc}"


async def slow_once(live: LiveRun, cfg: LoadConfig, with_slow: bool) -> dict[str, Any]:
    readers: list[SseReader] = []
    out: dict[str, Any] = {}
    thread: threading.Thread | None = None
    run_done = threading.Event()
    try:
        with CpuMeter(live.pids) as cpu, RssSampler(live.pids, 0.1) as mem:
            t0 = time.perf_counter()
            run_id = await start_run(live.direct, live.session_id, stream_text(cfg.slow_words))
            if with_slow:
                request = sse_request(run_id, live.target.host_header, live.target.headers)
                thread = threading.Thread(target=slow_reader, name="slow-client", daemon=True,
                                          args=(live.target, request, cfg.slow_rcvbuf,
                                                cfg.slow_read_s, run_done, out))
                thread.start()
            readers = list(await asyncio.gather(*(open_sse(live.target, run_id)
                                                  for _ in range(cfg.slow_normal_clients))))
            await asyncio.wait_for(asyncio.gather(*(r.closed for r in readers)),
                                   60 + cfg.slow_words / 100)
            t_normal = time.perf_counter()
            run_done.set()
            if thread is not None:
                await asyncio.to_thread(thread.join, cfg.slow_read_s + 150)
                if thread.is_alive():
                    raise RuntimeError("the slow client did not finish in time")
    finally:
        run_done.set()
        close_readers(readers)
    want = await read_truth(live, run_id)
    for i, r in enumerate(readers):
        check_ids(f"normal client {i}", r.seqs, want)
    run = await call(live.direct, "GET", f"runs/{run_id}")
    if run["status"] != "completed":
        raise RuntimeError(f"run {run_id} ended {run['status']}")
    done = [(r.frames.t_last - t0) * 1000 for r in readers if r.frames.t_last is not None]
    result: dict[str, Any] = {"events": len(want), "run_duration_ms": run["duration_ms"],
                              "normal_done_ms": round(max(done), 1),
                              "normal_done_all_ms": [round(x) for x in done],
                              "normal_wall_s": round(t_normal - t0, 3),
                              "cpu_pct": cpu.pct(), "rss_mb": mem.mb()}
    if with_slow:
        if "error" in out:
            raise RuntimeError(f"slow client: {out['error']}")
        raw = out.pop("raw")
        answer, frames = read_sse_answer(raw)
        if answer.status != 200:
            raise RuntimeError(f"slow client: {raw[:200]!r}")
        check_ids("slow client", frames.seqs, want)
        finished = answer.complete or not answer.chunked
        if not finished or frames.last_kind != b"run.status" \
                or b'"completed"' not in frames.last_frame:
            raise RuntimeError("slow client: the stream did not end on run.status completed")
        result["slow"] = {**out, "events": len(frames.seqs), "bytes": len(raw)}
    return result


async def bench_slow_client(quick: bool, owned: Owned) -> list[Figure]:
    cfg = LoadConfig.make(quick)
    live = await open_live(owned, "lpbs", cfg.slow_delay_ms)
    control: list[dict[str, Any]] = []
    slow: list[dict[str, Any]] = []
    try:
        await slow_once(live, LoadConfig(slow_words=1000), False)  # warm-up
        plan = [False, True] + [False] * (cfg.slow_controls - 1)
        for with_slow in plan:
            r = await slow_once(live, cfg, with_slow)
            (slow if with_slow else control).append(r)
            log(f"slow_client {'with' if with_slow else 'without'} the slow client: run "
                f"{r['run_duration_ms']:.0f} ms, normal clients done after "
                f"{r['normal_done_ms']:.0f} ms" + (
                    f"; slow client read {r['slow']['slow_frames']} frames slowly, caught up "
                    f"{r['slow']['events']} events in {r['slow']['catch_up_s']} s"
                    if with_slow else ""))
    finally:
        await live.close(owned)
    notes = {"via": live.via, "words": cfg.slow_words, "chunk_delay_ms": cfg.slow_delay_ms,
             "normal_clients": cfg.slow_normal_clients, "slow_read_s": cfg.slow_read_s,
             "rcvbuf_requested": cfg.slow_rcvbuf, "with_slow": slow, "without": control}
    base = "same run, same 5 clients, no slow client"
    return [
        Figure("slow_client", statistics.median(r["normal_done_ms"] for r in slow), "ms",
               statistics.median(r["normal_done_ms"] for r in control), base,
               Target("ratio", "<=", 1.2),
               {**notes, "value": "POST -> the last normal client's terminal event"}),
        Figure("slow_client.run_duration", statistics.median(r["run_duration_ms"] for r in slow),
               "ms", statistics.median(r["run_duration_ms"] for r in control), base,
               Target("ratio", "<=", 1.2)),
    ]
