"""Front vs direct on one live stack (daemon + front + a Ready example Host):

  delta_latency         output.delta arrival: front minus direct (same run, same moment)
                        vs  direct minus direct (the measuring noise floor); and POST->first delta
  run_create_202        POST /sessions/{id}/runs latency through the front  vs  direct, and vs
                        the same create transaction in process (the floor)
  request_relay         GET / POST /sessions requests/s through the front  vs  direct
                        (+ GET /health as a control: no SQLite on the daemon side)
"""

from __future__ import annotations

import asyncio
import datetime as dt
import itertools
import sqlite3
import statistics
import time
from pathlib import Path
from typing import Any

import aiohttp
import orjson

from llamon_playground.daemon.store.frames import frame_payload
from scripts.benchmarks.children.bare_servers import bare_server
from scripts.benchmarks.clients.client import (
    COMPLETED,
    P,
    call,
    count_sse,
    direct_session,
    front_headers,
    front_session,
    start_run,
)
from scripts.benchmarks.clients.raw_http import SseTarget, open_sse
from scripts.benchmarks.configs import CoreConfig
from scripts.benchmarks.figures import Figure, Target, log, pct
from scripts.benchmarks.inputs.create_floor import CreateFloor
from scripts.benchmarks.inputs.fixtures import stream_text
from scripts.benchmarks.meters import cpu_seconds
from scripts.benchmarks.owned import Owned
from scripts.benchmarks.stack import Stack


class Live:
    """A daemon + front with a Ready example Host (chunk delay set), plus clients for both ways.

    Shared by the three sections of this module; `close` (in the caller's finally) tears it down.
    """

    def __init__(self, cfg: CoreConfig, owned: Owned) -> None:
        self.cfg = cfg
        self.owned = owned
        self.stack: Stack | None = None
        self.port = 0
        self.clients: dict[str, aiohttp.ClientSession] = {}
        self.session_id = ""

    async def start(self) -> None:
        self.stack = self.owned.start(
            self.owned.project("lpbl"),
            extra_env={"ECHO_CHUNK_DELAY_MS": str(self.cfg.chunk_delay_ms)})
        _, url = self.stack.start_front()
        self.port = int(url.rsplit(":", 1)[1])
        self.clients["front"] = front_session(self.stack, url)
        self.clients["direct"] = direct_session(self.stack)
        self.session_id = (await call(self.clients["front"], "POST", "sessions", {"title": "t"},
                                      want=201))["id"]
        t0 = time.perf_counter()
        await self.run_to_end(self.clients["front"], "stream warm up the host")
        log(f"live stack up; first run (Host start) took {time.perf_counter() - t0:.2f} s")
        self.owned.note(self.stack)

    def http(self, way: str) -> aiohttp.ClientSession:
        return self.clients[way]

    def target(self, way: str) -> SseTarget:
        assert self.stack is not None
        if way == "front":
            return SseTarget("tcp", self.port, front_headers(self.stack))
        return SseTarget("unix", str(self.stack.settings.socket_path))

    async def run_to_end(self, http: aiohttp.ClientSession, text: str) -> str:
        run_id = await start_run(http, self.session_id, text)
        _, last, _ = await count_sse(http, run_id)
        if COMPLETED not in last:
            raise RuntimeError(f"run {run_id} did not complete: {last[-200:]!r}")
        return run_id

    async def close(self) -> None:
        for http in self.clients.values():
            await http.close()
        if self.stack is not None:
            self.owned.close_stack(self.stack)


async def bench_delta_latency(cfg: CoreConfig, live: Live) -> list[Figure]:
    http = live.http("front")
    body = {"parts": [{"kind": "text", "text": stream_text(cfg.latency_words)}]}
    t0 = time.perf_counter()
    async with http.post(f"{P}/sessions/{live.session_id}/runs", data=orjson.dumps(body),
                         headers={"Content-Type": "application/json"}) as resp:
        doc = orjson.loads(await resp.read())
        if resp.status != 202:
            raise RuntimeError(f"POST runs answered {resp.status}: {doc}")
    t202 = time.perf_counter()
    run_id = doc["run_id"]
    clients = await asyncio.gather(open_sse(live.target("front"), run_id, timed=True),
                                   open_sse(live.target("direct"), run_id, timed=True),
                                   open_sse(live.target("direct"), run_id, timed=True))
    timeout = 60 + cfg.latency_words * cfg.chunk_delay_ms / 1000 * 5
    await asyncio.wait_for(asyncio.gather(*(c.closed for c in clients)), timeout)
    front, direct_a, direct_b = (c.frames.timed_frames() for c in clients)
    for name, c, frames in zip(("front", "direct_a", "direct_b"), clients,
                               (front, direct_a, direct_b), strict=True):
        if c.status != 200 or not frames or frames[-1][1] != "run.status":
            raise RuntimeError(f"{name}: status {c.status}, {len(frames)} frames")
    deltas = {name: {s: (t, replay) for s, k, t, replay in fr if k == "output.delta"}
              for name, fr in (("front", front), ("a", direct_a), ("b", direct_b))}
    if len(deltas["a"]) != cfg.latency_words:
        raise RuntimeError(f"expected {cfg.latency_words} deltas, got {len(deltas['a'])}")
    live_seqs = [s for s in deltas["a"]
                 if all(s in d and not d[s][1] for d in deltas.values())]
    added = [(deltas["front"][s][0] - deltas["a"][s][0]) * 1000 for s in live_seqs]
    floor = [(deltas["b"][s][0] - deltas["a"][s][0]) * 1000 for s in live_seqs]
    arrivals_a = sorted(t for t, _ in deltas["a"].values())
    gaps = [(y - x) * 1000 for x, y in itertools.pairwise(arrivals_a)]
    timeline = [{"seq": s, "kind": k, "ms_after_post": round((t - t0) * 1000, 2)}
                for s, k, t, _ in direct_a if k != "output.delta"]
    assert live.stack is not None
    try:
        server = server_timeline(live.stack.settings.db_path, run_id)
    except (sqlite3.Error, TypeError) as exc:
        server = {"error": str(exc)}
    first_front = min(t for t, _ in deltas["front"].values())
    first_direct = min(t for t, _ in deltas["a"].values())
    notes = {"words": cfg.latency_words, "chunk_delay_ms": cfg.chunk_delay_ms,
             "live_samples": len(live_seqs),
             "front_added_ms": {"p50": pct(added, 50), "p90": pct(added, 90),
                                "p99": pct(added, 99), "max": max(added),
                                "min": min(added)},
             "direct_minus_direct_ms": {"p50": pct(floor, 50), "p99": pct(floor, 99),
                                        "max": max(floor)},
             "direct_interarrival_ms": {"p50": pct(gaps, 50), "p99": pct(gaps, 99)},
             "post_202_ms": (t202 - t0) * 1000}
    log(f"delta_latency: {len(live_seqs)} live deltas; front-added p50 {pct(added, 50):.3f} "
        f"p99 {pct(added, 99):.3f} ms; first delta {(first_front - t0) * 1000:.1f} ms")
    base = "direct client B minus direct client A (noise floor)"
    return [
        Figure("delta_latency.front_added_p50", pct(added, 50), "ms", pct(floor, 50), base,
               None, notes),
        Figure("delta_latency.front_added_p99", pct(added, 99), "ms", pct(floor, 99), base,
               Target("value", "<=", 3.0)),
        Figure("delta_latency.post_to_first_delta", (first_front - t0) * 1000, "ms",
               (first_direct - t0) * 1000, "same run's first delta on the daemon socket",
               None, {"from": "POST runs sent", "post_202_ms": (t202 - t0) * 1000,
                      "from_202_ms": (first_front - t202) * 1000,
                      "direct_timeline": timeline, "server_timeline": server}),
    ]


async def bench_run_create(cfg: CoreConfig, live: Live) -> list[Figure]:
    """Create then wait for the end, interleaved three ways: through the front, on the
    daemon's socket, and the same create transaction in this process (the floor); beside
    them, the same client's POST to a server that only answers 202 (bare_servers.py)."""
    async with bare_server("asyncio") as raw_url, bare_server("aiohttp") as aio_url, \
            aiohttp.ClientSession(base_url=raw_url) as raw, \
            aiohttp.ClientSession(base_url=aio_url) as aio:
        return await _run_create(cfg, live, {"asyncio": raw, "aiohttp": aio})


async def _run_create(cfg: CoreConfig, live: Live,
                      bare: dict[str, aiohttp.ClientSession]) -> list[Figure]:
    payload = {"parts": [{"kind": "text", "text": "stream x"}]}
    body = orjson.dumps(payload)
    headers = {"Content-Type": "application/json"}
    samples: dict[str, list[float]] = {"front": [], "direct": [], "in_process": []}
    # A control: the same client's round trip to an answer that touches no SQLite.
    health: dict[str, list[float]] = {"front": [], "direct": []}
    conflicts = {"front": 0, "direct": 0}
    floor = CreateFloor(live.owned.tmpdir("lpfl"))
    bare_ms: dict[str, list[float]] = {kind: [] for kind in bare}

    async def bare_one(kind: str) -> None:
        t0 = time.perf_counter()
        async with bare[kind].post("/x", data=body, headers=headers) as resp:
            await resp.read()
        if resp.status != 202:
            raise RuntimeError(f"the bare {kind} server answered {resp.status}")
        bare_ms[kind].append((time.perf_counter() - t0) * 1000)

    async def one(way: str, measure: bool) -> None:
        http = live.http(way)
        for _attempt in range(200):
            t0 = time.perf_counter()
            async with http.post(f"{P}/sessions/{live.session_id}/runs", data=body,
                                 headers=headers) as resp:
                raw = await resp.read()
                status = resp.status
            elapsed = (time.perf_counter() - t0) * 1000
            if status == 202:
                break
            if status == 409:  # the previous run's lock is not released yet
                conflicts[way] += 1
                await asyncio.sleep(0.002)
                continue
            raise RuntimeError(f"{way}: POST runs answered {status}: {raw[:200]!r}")
        else:
            raise RuntimeError(f"{way}: the previous run never released the lock")
        if measure:
            samples[way].append(elapsed)
        run_id = orjson.loads(raw)["run_id"]
        _, last, _ = await count_sse(http, run_id)
        if COMPLETED not in last:
            raise RuntimeError(f"run {run_id} did not complete: {last[-200:]!r}")

    try:
        for way in ("front", "direct", "front", "direct"):  # warm-up
            await one(way, False)
        floor.one(payload)
        for i in range(cfg.create_samples):
            order = ("front", "direct") if i % 2 == 0 else ("direct", "front")
            for way in order:
                await one(way, True)
                t0 = time.perf_counter()
                async with live.http(way).get("/health") as resp:
                    await resp.read()
                health[way].append((time.perf_counter() - t0) * 1000)
            # Right after a run ended, as the daemon's creates are.
            samples["in_process"].append(floor.one(payload))
            for kind in sorted(bare, reverse=i % 2 == 1):
                await bare_one(kind)
    finally:
        floor.close()
    f, d, ip = samples["front"], samples["direct"], samples["in_process"]
    log(f"run_create_202: front p50 {pct(f, 50):.2f} p99 {pct(f, 99):.2f} ms; "
        f"direct p50 {pct(d, 50):.2f} p99 {pct(d, 99):.2f} ms; in process p50 "
        f"{pct(ip, 50):.2f} p99 {pct(ip, 99):.2f} ms; front / in process p50 "
        f"{pct(f, 50) / pct(ip, 50):.2f}; GET /health p50 front "
        f"{pct(health['front'], 50):.2f} direct {pct(health['direct'], 50):.2f} ms; "
        f"bare 202 p50 asyncio {pct(bare_ms['asyncio'], 50):.2f} aiohttp "
        f"{pct(bare_ms['aiohttp'], 50):.2f} ms; 409 retries {conflicts}")
    notes = {"samples": len(f), "front_max_ms": max(f), "direct_max_ms": max(d),
             "in_process_max_ms": max(ip), "conflict_retries_409": conflicts,
             "direct_ms": {"p50": pct(d, 50), "p99": pct(d, 99)},
             "in_process_ms": {"p50": pct(ip, 50), "p99": pct(ip, 99)},
             "health_control_ms": {way: {"p50": pct(xs, 50), "p99": pct(xs, 99)}
                                   for way, xs in health.items()},
             "bare_202_ms": {kind: {"p50": pct(xs, 50), "p99": pct(xs, 99)}
                             for kind, xs in bare_ms.items()}}
    floor_what = "the same create transaction in process (BEGIN to durable COMMIT)"
    # The design's floor for a create, measured here: the front and the daemon are one
    # aiohttp hop each (the bare aiohttp server's 202), plus one durable commit. What is over
    # it is ours (six wake-ups and the writer thread's hand-off) and has a margin to meet.
    hop = {p: pct(bare_ms["aiohttp"], p) for p in (50, 99)}
    commit = {p: pct(ip, p) for p in (50, 99)}
    front_floor = {p: 2 * hop[p] + commit[p] for p in (50, 99)}
    direct_floor = {p: hop[p] + commit[p] for p in (50, 99)}
    notes["floor_ms"] = {"front": front_floor, "direct": direct_floor,
                         "bare_aiohttp_hop": hop, "durable_commit": commit}
    front_what = "two bare aiohttp hops (front, daemon) + the durable commit, same run"
    return [
        Figure("run_create_202.p50", pct(f, 50), "ms", front_floor[50], front_what,
               Target("margin", "<=", 1.0), notes),
        Figure("run_create_202.p99", pct(f, 99), "ms", front_floor[99], front_what,
               Target("margin", "<=", 3.0)),
        Figure("run_create_202.direct_p50", pct(d, 50), "ms", direct_floor[50],
               "one bare aiohttp hop + the durable commit, same run",
               Target("margin", "<=", 1.0)),
        Figure("run_create_202.front_vs_floor_p50", pct(f, 50), "ms", pct(ip, 50), floor_what,
               Target("ratio", "<=", 3.0)),
        Figure("run_create_202.front_vs_floor_p99", pct(f, 99), "ms", pct(ip, 99), floor_what,
               None),
        Figure("run_create_202.direct_vs_floor_p50", pct(d, 50), "ms", pct(ip, 50), floor_what,
               None),
        # What one HTTP hop costs before any code of ours: the front and the daemon are one
        # aiohttp server each (docs/benchmarks.md, "Run creation").
        Figure("run_create_202.bare_aiohttp_p50", pct(bare_ms["aiohttp"], 50), "ms",
               pct(bare_ms["asyncio"], 50),
               "the same client's POST to a bare asyncio Protocol answering 202", None),
    ]


async def hammer(http: aiohttp.ClientSession, method: str, path: str, data: bytes | None,
                 total: int, concurrency: int) -> tuple[float, int]:
    remaining = [total]
    errors = [0]
    headers = {"Content-Type": "application/json"} if data is not None else {}

    async def worker() -> None:
        while remaining[0] > 0:
            remaining[0] -= 1
            async with http.request(method, path, data=data, headers=headers) as resp:
                await resp.read()
                if resp.status >= 300:
                    errors[0] += 1

    t0 = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return total / (time.perf_counter() - t0), errors[0]


RELAY_TARGETS = {"get_sessions": Target("ratio", ">=", 0.7),
                 "post_sessions": Target("ratio", ">=", 0.6)}  # get_health: a control


async def bench_request_relay(cfg: CoreConfig, live: Live) -> list[Figure]:
    assert live.stack is not None and live.stack.daemon is not None
    daemon_pid = live.stack.daemon.pid
    front_pid = live.stack.fronts[0].pid
    figures = []
    # GET first: every POST adds a session, and GET /sessions lists them all.
    # get_health is a control without SQLite: the daemon answers it on the loop thread, while
    # /sessions pays one aiosqlite thread hop (reads) or a writer transaction (POST).
    for label, method, path, data in (("get_sessions", "GET", f"{P}/sessions", None),
                                      ("post_sessions", "POST", f"{P}/sessions", b"{}"),
                                      ("get_health", "GET", "/health", None)):
        rates: dict[str, list[float]] = {"front": [], "direct": []}
        cpu_us: dict[str, list[dict[str, float]]] = {"front": [], "direct": []}
        for way in ("front", "direct"):  # warm-up: open the keep-alive connections
            await hammer(live.http(way), method, path, data, 4 * cfg.relay_concurrency,
                         cfg.relay_concurrency)
        for rep in range(cfg.relay_reps):
            order = ("front", "direct") if rep % 2 == 0 else ("direct", "front")
            for way in order:
                c0 = (cpu_seconds([daemon_pid]), cpu_seconds([front_pid]), time.process_time())
                rate, errors = await hammer(live.http(way), method, path, data,
                                            cfg.relay_requests, cfg.relay_concurrency)
                c1 = (cpu_seconds([daemon_pid]), cpu_seconds([front_pid]), time.process_time())
                if errors:
                    raise RuntimeError(f"{label} {way}: {errors} failed requests")
                rates[way].append(rate)
                n = cfg.relay_requests
                cpu_us[way].append({"daemon": round((c1[0] - c0[0]) / n * 1e6),
                                    "front": round((c1[1] - c0[1]) / n * 1e6),
                                    "client": round((c1[2] - c0[2]) / n * 1e6)})
            log(f"{label} rep {rep + 1}: front {rates['front'][-1]:,.0f}/s, "
                f"direct {rates['direct'][-1]:,.0f}/s")
        figures.append(Figure(
            f"request_relay.{label}", statistics.median(rates["front"]), "req/s",
            statistics.median(rates["direct"]), "same requests on the daemon socket",
            RELAY_TARGETS.get(label),
            {"requests": cfg.relay_requests, "concurrency": cfg.relay_concurrency,
             "reps": cfg.relay_reps, "front_rates": [round(x) for x in rates["front"]],
             "direct_rates": [round(x) for x in rates["direct"]],
             "cpu_us_per_request": cpu_us}))
    # What all those POSTs did to GET /sessions (it lists every session, no paging).
    t0 = time.perf_counter()
    async with live.http("direct").get(f"{P}/sessions") as resp:
        raw = await resp.read()
    elapsed_ms = (time.perf_counter() - t0) * 1000
    figures[0].notes["one_get_sessions_after_post_phase"] = {
        "sessions": len(orjson.loads(raw)["sessions"]), "ms": round(elapsed_ms, 2),
        "bytes": len(raw)}
    return figures


def server_timeline(db_path: Path, run_id: str) -> dict[str, Any]:
    """The daemon's own clock (ms resolution): run row created_at, then each event's commit ts."""
    def ms(ts: str) -> float:
        return dt.datetime.fromisoformat(ts).timestamp() * 1000
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        created = conn.execute("SELECT created_at FROM runs WHERE id = ?", (run_id,)).fetchone()[0]
        rows = conn.execute("SELECT seq, kind, frame, ts FROM events WHERE run_id = ? "
                            "ORDER BY seq", (run_id,)).fetchall()
    finally:
        conn.close()
    out = []
    seen_delta = False
    for seq, kind, frame, ts in rows:
        if kind == "output.delta":
            if seen_delta:
                continue
            seen_delta = True
        doc = frame_payload(frame)
        what = kind + ":" + ",".join(str(doc[k]) for k in ("phase", "state", "status")
                                     if k in doc)
        out.append({"seq": seq, "event": what, "ms_after_created": round(ms(ts) - ms(created))})
    return {"created_at": created, "events": out}
