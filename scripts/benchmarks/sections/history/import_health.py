"""/health while the largest allowed bundle is imported:

  import_health      p99 of GET /health on the daemon socket while one POST /bundles/import
                     of ~3.5 million JSON values and 8 blobs of 16 MiB (about 230 MB of body)
                     is read, counted, parsed, validated and written; the daemon's peak RSS
                     over its RSS before  vs  the same /health p99 with no import running
  export_health      the same p99 while that history is exported back (POST /bundles/export
                     of everything: read, built, dumped, counted)  vs  the same baseline
"""

from __future__ import annotations

import asyncio
import base64
import gc
import hashlib
import io
import os
import time
from pathlib import Path

import orjson

from scripts.benchmarks.clients.client import P, direct_session
from scripts.benchmarks.figures import Figure, Target, log, pct
from scripts.benchmarks.meters import MB, rss
from scripts.benchmarks.owned import Owned

FULL = {"events": 500_000, "blobs": 8}
QUICK = {"events": 50_000, "blobs": 1}
BLOB_BYTES = 16 * 1024 * 1024


def largest_bundle(events: int, blobs: int) -> bytes:
    """One session, one run whose input names every blob, `events` small events."""
    datas = [os.urandom(BLOB_BYTES) for _ in range(blobs)]
    shas = [hashlib.sha256(d).hexdigest() for d in datas]
    run = {"id": "r1", "session_id": "s1", "status": "completed",
           "created_at": "2026-01-01T00:00:00Z", "context_id": "c1",
           "input": {"parts": [{"kind": "file", "sha256": s, "size": BLOB_BYTES,
                                "name": f"{i}.bin"} for i, s in enumerate(shas)]},
           "output": [{"kind": "text", "text": "done"}]}
    return orjson.dumps({
        "format": "llamon.playground.bundle/1",
        "sessions": [{"id": "s1", "title": "largest import"}], "runs": [run],
        "events": [{"seq": i, "run_id": "r1", "kind": "output.delta",
                    "payload": {"text": "chunk"}} for i in range(events)],
        "blobs": {s: {"bytes_base64": base64.b64encode(d).decode(), "size": BLOB_BYTES}
                  for s, d in zip(shas, datas, strict=True)}})


def peak_rss(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(ln.split()[1] for ln in status.splitlines()
                    if ln.startswith("VmHWM:"))) * 1024


async def health_p99(http, stop: asyncio.Event | None, count: int) -> list[float]:  # type: ignore[no-untyped-def]
    xs: list[float] = []
    while (stop is None and len(xs) < count) or (stop is not None and not stop.is_set()):
        t = time.perf_counter()
        async with http.get(f"{P}/health") as resp:
            await resp.read()
        xs.append((time.perf_counter() - t) * 1000)
        await asyncio.sleep(0.01)  # a poller, not a flood
    return xs


async def bench_import_health(quick: bool, owned: Owned) -> list[Figure]:
    size = QUICK if quick else FULL
    raw = await asyncio.to_thread(largest_bundle, size["events"], size["blobs"])
    # What earlier sections left in this process's heap must not time its own collections
    # into the daemon's latency: everything alive now is left out of them.
    gc.collect()
    gc.freeze()
    try:
        return await _measure(raw, owned)
    finally:
        gc.unfreeze()


async def _measure(raw: bytes, owned: Owned) -> list[Figure]:
    stack = owned.start(owned.project("lpim"))
    try:
        assert stack.daemon is not None
        pid = stack.daemon.pid
        async with direct_session(stack) as http:
            idle = await health_p99(http, None, 200)
            rss_before = rss(pid)
            busy, took, (status, answer) = await while_polled(
                http, http.post(f"{P}/bundles/import", data=io.BytesIO(raw),
                                headers={"Content-Type": "application/json"}))
            if status != 201:
                raise RuntimeError(f"import answered {status}: {answer[:300]!r}")
            peak = peak_rss(pid)
            export_busy, export_took, (status, answer) = await while_polled(
                http, http.post(f"{P}/bundles/export", data=b"{}",
                                headers={"Content-Type": "application/json"}))
            if status != 200:
                raise RuntimeError(f"export answered {status}: {answer[:300]!r}")
            exported = len(answer)
            del answer
    finally:
        owned.close_stack(stack)
    log(f"import_health: {len(raw) / MB:.0f} MB imported in {took:.1f} s; /health p99 "
        f"{pct(busy, 99):.1f} ms over {len(busy)} requests (idle p99 {pct(idle, 99):.2f} ms); "
        f"peak RSS {peak / MB:.0f} MB (before {rss_before / MB:.0f} MB)")
    log(f"export_health: {exported / MB:.0f} MB exported in {export_took:.1f} s; /health p99 "
        f"{pct(export_busy, 99):.1f} ms over {len(export_busy)} requests")
    return [Figure("import_health.health_p99", pct(busy, 99), "ms", pct(idle, 99),
                   "GET /health p99 with no import running", Target("value", "<=", 100.0),
                   {"body_mb": round(len(raw) / MB, 1), "import_s": round(took, 2),
                    "health_requests": len(busy), "health_max_ms": round(max(busy), 1),
                    "rss_before_mb": round(rss_before / MB, 1), "peak_rss_mb": round(peak / MB, 1),
                    "peak_over_body": round((peak - rss_before) / len(raw), 2)}),
            Figure("export_health.health_p99", pct(export_busy, 99), "ms", pct(idle, 99),
                   "GET /health p99 with no import running", Target("value", "<=", 100.0),
                   {"bundle_mb": round(exported / MB, 1), "export_s": round(export_took, 2),
                    "health_requests": len(export_busy),
                    "health_max_ms": round(max(export_busy), 1)})]


async def while_polled(http, request) -> tuple[list[float], float, tuple[int, bytes]]:  # type: ignore[no-untyped-def]
    """Run one request while /health is polled: the poll's latencies, the request's time,
    its status and body."""
    stop = asyncio.Event()
    poller = asyncio.create_task(health_p99(http, stop, 0))
    t0 = time.perf_counter()
    try:
        async with request as resp:
            answer = await resp.read()
            status = resp.status
    finally:
        stop.set()
        busy = await poller
    return busy, time.perf_counter() - t0, (status, answer)
