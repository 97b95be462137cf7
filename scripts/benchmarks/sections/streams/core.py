"""store_append and sse_front_vs_direct: the write path in process, the replay path over HTTP.

  store_append          Store.append_event events/s  vs  raw sqlite3 executemany (1 txn)
  sse_front_vs_direct   SSE replay of 100k events through the front  vs  the daemon socket
"""

from __future__ import annotations

import asyncio
import sqlite3
import statistics
import time
from pathlib import Path

import orjson

from llamon_playground.common.config import build_settings
from llamon_playground.common.ids import new_run_id
from llamon_playground.daemon.store.database import Store
from llamon_playground.daemon.store.records import utcnow
from scripts.benchmarks.clients.client import COMPLETED, count_sse, direct_session, front_session
from scripts.benchmarks.configs import CoreConfig
from scripts.benchmarks.figures import Figure, Target, log
from scripts.benchmarks.inputs.fixtures import EVENTS_DDL, INSERT_EVENT, insert_finished_run
from scripts.benchmarks.meters import cpu_seconds
from scripts.benchmarks.owned import Owned


async def store_append_once(base: Path, n: int, burst: int) -> tuple[float, int]:
    project = base / f"proj{time.monotonic_ns()}"
    project.mkdir()
    settings = build_settings(project, {"LLAMON_PLAYGROUND_RUNTIME_DIR": str(base / "rt")})
    store = Store(settings)
    await store.open()
    try:
        run_id = new_run_id()
        payload = {"text": "tok "}
        t0 = time.perf_counter()
        done = 0
        while done < n:
            k = min(burst, n - done)
            for _ in range(k):
                store.append_event(run_id, "output.delta", payload)
            done += k
            await asyncio.sleep(0)
        await store.flush()
        elapsed = time.perf_counter() - t0
        row = await store.fetch_one("SELECT COUNT(*) FROM events WHERE run_id = ?", (run_id,))
        stored = int(row[0]) if row else 0
    finally:
        await store.close()
    return n / elapsed, stored


def sqlite_baseline_once(base: Path, n: int, encode: bool = False) -> float:
    """Rows built beforehand (encode=False), or built and JSON-encoded inside the timing."""
    path = base / f"baseline{time.monotonic_ns()}.sqlite3"
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        conn.executescript(EVENTS_DDL)
        run_id = new_run_id()
        ts = utcnow()
        payload = {"text": "tok "}
        encoded = orjson.dumps(payload)
        rows = [] if encode else [(i + 1, run_id, "output.delta", encoded, ts) for i in range(n)]
        t0 = time.perf_counter()
        if encode:
            rows = [(i + 1, run_id, "output.delta", orjson.dumps(payload), ts) for i in range(n)]
        conn.execute("BEGIN")
        conn.executemany(INSERT_EVENT, rows)
        conn.execute("COMMIT")
        elapsed = time.perf_counter() - t0
    finally:
        conn.close()
    return n / elapsed


async def bench_store_append(quick: bool, owned: Owned) -> list[Figure]:
    cfg = CoreConfig.make(quick)
    base = owned.tmpdir("lpbs")
    store_rates, base_rates, encode_rates = [], [], []
    # Warm-up (not counted): the first 100k appends in a process also pay for growing the
    # Python heap and are ~20-40 % slower than the following ones.
    await store_append_once(base, cfg.store_events, cfg.store_burst)
    sqlite_baseline_once(base, cfg.store_events)
    for rep in range(cfg.store_reps):
        # Alternate the order so that drift hits both sides alike.
        order = ("store", "base") if rep % 2 == 0 else ("base", "store")
        for what in order:
            if what == "store":
                rate, stored = await store_append_once(base, cfg.store_events, cfg.store_burst)
                if stored != cfg.store_events:
                    raise RuntimeError(f"store kept {stored} of {cfg.store_events} events")
                store_rates.append(rate)
            else:
                base_rates.append(sqlite_baseline_once(base, cfg.store_events))
                encode_rates.append(sqlite_baseline_once(base, cfg.store_events, encode=True))
        log(f"store_append rep {rep + 1}: store {store_rates[-1]:,.0f}/s, "
            f"sqlite3 {base_rates[-1]:,.0f}/s")
    return [Figure("store_append", statistics.median(store_rates), "events/s",
                   statistics.median(base_rates), "sqlite3 executemany, 1 txn, WAL+FULL",
                   Target("ratio", ">=", 0.6),
                   {"events": cfg.store_events, "burst": cfg.store_burst, "reps": cfg.store_reps,
                    "store_rates": [round(x) for x in store_rates],
                    "baseline_rates": [round(x) for x in base_rates],
                    "baseline_incl_row_building_rates": [round(x) for x in encode_rates],
                    "ratio_vs_baseline_incl_row_building":
                        statistics.median(store_rates) / statistics.median(encode_rates)})]


async def bench_sse(quick: bool, owned: Owned) -> list[Figure]:
    cfg = CoreConfig.make(quick)
    project = owned.project("lpbe")
    doc, db_path = await owned.session_fixture(project, "bench sse")
    t0 = time.perf_counter()
    run_id = insert_finished_run(db_path, doc["id"], doc["context_id"], cfg.sse_events)
    log(f"sse: wrote {cfg.sse_events:,} events in {time.perf_counter() - t0:.2f} s")
    stack = owned.start(project)
    front, url = stack.start_front()
    assert stack.daemon is not None
    daemon_pid, front_pid = stack.daemon.pid, front.pid
    direct = direct_session(stack)
    via_front = front_session(stack, url)
    rates: dict[str, list[float]] = {"front": [], "direct": []}
    cpu: dict[str, list[dict[str, float]]] = {"front": [], "direct": []}
    try:
        for http in (direct, via_front):  # warm-up: page cache, connections
            await count_sse(http, run_id)
        for rep in range(cfg.sse_reps):
            order = ("front", "direct") if rep % 2 == 0 else ("direct", "front")
            for what in order:
                http = via_front if what == "front" else direct
                c0 = (cpu_seconds([daemon_pid]), cpu_seconds([front_pid]))
                t0 = time.perf_counter()
                count, last, nbytes = await count_sse(http, run_id)
                elapsed = time.perf_counter() - t0
                c1 = (cpu_seconds([daemon_pid]), cpu_seconds([front_pid]))
                if count != cfg.sse_events or COMPLETED not in last:
                    raise RuntimeError(f"{what}: read {count} events (want {cfg.sse_events}); "
                                       f"tail {last[-120:]!r}")
                rates[what].append(count / elapsed)
                cpu[what].append({"daemon_s": round(c1[0] - c0[0], 3),
                                  "front_s": round(c1[1] - c0[1], 3),
                                  "wall_s": round(elapsed, 3), "bytes": nbytes})
            log(f"sse rep {rep + 1}: front {rates['front'][-1]:,.0f}/s, "
                f"direct {rates['direct'][-1]:,.0f}/s")
    finally:
        await direct.close()
        await via_front.close()
        owned.close_stack(stack)
    return [Figure("sse_front_vs_direct", statistics.median(rates["front"]), "events/s",
                   statistics.median(rates["direct"]), "same replay from the daemon socket",
                   Target("ratio", ">=", 0.95),
                   {"events": cfg.sse_events, "reps": cfg.sse_reps,
                    "front_rates": [round(x) for x in rates["front"]],
                    "direct_rates": [round(x) for x in rates["direct"]], "cpu": cpu})]
