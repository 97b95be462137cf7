"""Reading a big history on the daemon socket, each  vs  the same read with sqlite3 in process:

  history_1m         1,000 runs / 1,000,000 events in one session: p99 of list sessions, list
                     the session's runs, open a run
  replay_100k        replay of a 100,000-event run, events/s, with the daemon's RSS sampled
"""

from __future__ import annotations

import asyncio
import random
import sqlite3
import statistics
import time
from pathlib import Path
from typing import Any

import orjson

from scripts.benchmarks.clients.client import P, call, direct_session
from scripts.benchmarks.clients.raw_http import SseTarget, check_ids, open_sse
from scripts.benchmarks.configs import LoadConfig
from scripts.benchmarks.figures import Figure, Target, log, pct
from scripts.benchmarks.inputs.fixtures import NO_WATCH, build_history, insert_finished_run
from scripts.benchmarks.meters import MB, RssSampler, rss
from scripts.benchmarks.owned import Owned


async def bench_history(quick: bool, owned: Owned) -> list[Figure]:
    cfg = LoadConfig.make(quick)
    project = owned.project("lpbm")
    session, db_path = await owned.session_fixture(project, "one million events", NO_WATCH)
    t0 = time.perf_counter()
    run_ids = await asyncio.to_thread(build_history, db_path, session["id"],
                                      session["context_id"], cfg.history_runs,
                                      cfg.history_events_per_run)
    build_s = time.perf_counter() - t0
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        counts = {t: conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]
                  for t in ("sessions", "runs", "events")}
        last_kinds = conn.execute(
            "SELECT COUNT(*) FROM (SELECT MAX(seq) AS last FROM events GROUP BY run_id) x "
            "JOIN events e ON e.seq = x.last WHERE e.kind = 'run.status' "
            "AND CAST(e.frame AS TEXT) LIKE '%\"status\":\"completed\"%'").fetchone()[0]
    finally:
        conn.close()
    log(f"history_1m: wrote {counts} in {build_s:.1f} s "
        f"({db_path.stat().st_size / MB:.0f} MB); runs ending completed: {last_kinds}")
    want_events = cfg.history_runs * cfg.history_events_per_run
    if counts["events"] != want_events or counts["runs"] != cfg.history_runs \
            or last_kinds != cfg.history_runs:
        raise RuntimeError(f"fixture is wrong: {counts}, {last_kinds} completed endings")

    t0 = time.perf_counter()
    stack = owned.start(project, NO_WATCH)
    start_s = time.perf_counter() - t0
    assert stack.daemon is not None
    daemon_pid = stack.daemon.pid
    # The daemon compacts the finished runs it finds (once, in the background); the figures
    # are of the history as it stays, so they are taken after.
    t0 = time.perf_counter()
    await wait_compacted(db_path, None, timeout=600)
    compact_s = time.perf_counter() - t0
    sid = session["id"]
    rng = random.Random(7)
    paths = {"list_sessions": lambda: f"{P}/sessions",
             "list_runs": lambda: f"{P}/sessions/{sid}/runs",
             "run_detail": lambda: f"{P}/runs/{rng.choice(run_ids)}"}
    # The API pages lists (100 by default); the baseline reads the same first page.
    sql = {"list_sessions": (("SELECT s.*, (SELECT COUNT(*) FROM runs r WHERE "
                             "r.session_id = s.id) AS run_count FROM sessions s ORDER BY s.rowid "
                             "LIMIT 101"), lambda: ()),
           "list_runs": ("SELECT * FROM runs WHERE session_id = ? ORDER BY rowid LIMIT 101",
                         lambda: (sid,)),
           "run_detail": ("SELECT * FROM runs WHERE id = ?", lambda: (rng.choice(run_ids),))}
    samples: dict[str, list[float]] = {}
    base: dict[str, list[float]] = {}
    sizes: dict[str, int] = {}
    try:
        async with direct_session(stack) as http:
            for name, path in paths.items():
                for _ in range(5):  # warm-up
                    async with http.get(path()) as resp:
                        raw = await resp.read()
                        if resp.status != 200:
                            raise RuntimeError(f"{name}: {resp.status} {raw[:200]!r}")
                check_history_answer(name, orjson.loads(raw), cfg)
                sizes[name] = len(raw)
                xs = []
                for _ in range(cfg.history_requests):
                    t = time.perf_counter()
                    async with http.get(path()) as resp:
                        await resp.read()
                        status = resp.status
                    xs.append((time.perf_counter() - t) * 1000)
                    if status != 200:
                        raise RuntimeError(f"{name}: answered {status}")
                samples[name] = xs
        daemon_rss = rss(daemon_pid)
        conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
        conn.row_factory = sqlite3.Row
        try:
            for name, (query, params) in sql.items():
                for _ in range(5):
                    conn.execute(query, params()).fetchall()
                xs = []
                for _ in range(cfg.history_requests):
                    t = time.perf_counter()
                    conn.execute(query, params()).fetchall()
                    xs.append((time.perf_counter() - t) * 1000)
                base[name] = xs
        finally:
            conn.close()
    finally:
        owned.close_stack(stack)
    figures = []
    for name in paths:
        s, b = samples[name], base[name]
        log(f"history_1m {name}: p50 {pct(s, 50):.2f} p99 {pct(s, 99):.2f} ms "
            f"({sizes[name]:,} bytes); sqlite3 p99 {pct(b, 99):.3f} ms")
        notes = {"requests": len(s), "p50_ms": round(pct(s, 50), 3), "max_ms": round(max(s), 3),
                 "answer_bytes": sizes[name], "sqlite3_p50_ms": round(pct(b, 50), 3)}
        if name == "list_sessions":
            notes.update({"runs": counts["runs"], "events": counts["events"],
                          "fixture_build_s": round(build_s, 1),
                          "db_mb": round(db_path.stat().st_size / MB, 1),
                          "daemon_start_s": round(start_s, 2),
                          "compacted_in_s": round(compact_s, 1),
                          "daemon_rss_mb_after": round(daemon_rss / MB, 1)})
        figures.append(Figure(f"history_1m.{name}_p99", pct(s, 99), "ms", pct(b, 99),
                              "same SQL, sqlite3 in process (execute+fetchall)",
                              Target("value", "<=", 50.0), notes))
    return figures


def check_history_answer(name: str, doc: Any, cfg: LoadConfig) -> None:
    if name == "list_sessions":
        ok = len(doc["sessions"]) == 1 and doc["sessions"][0]["run_count"] == cfg.history_runs
    elif name == "list_runs":  # the first page (100 by default) of the session's runs
        ok = len(doc["runs"]) == min(100, cfg.history_runs) and (
            doc["next_after"] is not None) == (cfg.history_runs > 100)
    else:
        ok = doc["status"] == "completed"
    if not ok:
        raise RuntimeError(f"{name}: unexpected answer {str(doc)[:300]}")


def sqlite_read(db_path: Path, run_id: str) -> tuple[float, list[int]]:
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        t0 = time.perf_counter()
        seqs = [row[0] for row in conn.execute(
            "SELECT seq, kind, frame FROM events WHERE run_id = ? ORDER BY seq", (run_id,))]
        elapsed = time.perf_counter() - t0
    finally:
        conn.close()
    return len(seqs) / elapsed, seqs


def copy_database(src: Path, dst: Path) -> None:
    source, target = sqlite3.connect(src), sqlite3.connect(dst)
    try:
        source.backup(target)
    finally:
        source.close()
        target.close()


async def wait_compacted(db_path: Path, run_id: str | None, timeout: float = 120) -> None:
    """Until only the terminal status of the run (of every run: None) is still a row; the
    rest are blocks."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
        try:
            if run_id is None:
                left, runs = conn.execute(
                    "SELECT COUNT(*), COUNT(DISTINCT run_id) FROM events").fetchone()
            else:
                left, runs = conn.execute("SELECT COUNT(*), 1 FROM events WHERE run_id = ?",
                                          (run_id,)).fetchone()
        finally:
            conn.close()
        if left <= runs:
            return
        await asyncio.sleep(0.05)
    raise RuntimeError(f"the daemon did not compact the finished runs in {timeout:.0f} s")


def stored_bytes(db_path: Path, raw_path: Path) -> dict[str, float]:
    """Bytes per event on disk (tables and indexes, from dbstat): blocks vs rows."""
    def size(path: Path, names: tuple[str, ...]) -> int:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            return int(conn.execute(
                f"SELECT COALESCE(sum(pgsize), 0) FROM dbstat WHERE name IN "
                f"({', '.join('?' * len(names))})", names).fetchone()[0])
        finally:
            conn.close()
    conn = sqlite3.connect(f"file:{raw_path}?mode=ro", uri=True)
    try:
        events = int(conn.execute("SELECT COUNT(*) FROM events").fetchone()[0]) or 1
    finally:
        conn.close()
    return {"bytes_per_event_rows": round(size(raw_path, ("events", "events_by_run")) / events, 1),
            "bytes_per_event_blocks": round(size(db_path, (
                "events", "events_by_run", "event_blocks", "event_blocks_by_run")) / events, 1)}


async def bench_replay(quick: bool, owned: Owned) -> list[Figure]:
    cfg = LoadConfig.make(quick)
    project = owned.project("lpbr")
    session, db_path = await owned.session_fixture(project, "replay", NO_WATCH)
    run_id = insert_finished_run(db_path, session["id"], session["context_id"],
                                 cfg.replay_events)
    # The baseline reads the run as rows of frames, as a live run is kept; the daemon
    # compacts the finished run into blocks (docs/storage.md) and replays those.
    raw_path = db_path.with_name("raw-frames.sqlite3")
    copy_database(db_path, raw_path)
    _, want = sqlite_read(raw_path, run_id)
    stack = owned.start(project, NO_WATCH)
    assert stack.daemon is not None
    daemon_pid = stack.daemon.pid
    target = SseTarget("unix", str(stack.settings.socket_path))
    rates: list[float] = []
    base: list[float] = []
    per_rep: list[dict[str, float]] = []
    try:
        async with direct_session(stack) as http:  # opens the store (first API call)
            await call(http, "GET", f"runs/{run_id}")
        t0 = time.perf_counter()
        await wait_compacted(db_path, run_id)
        compact_s = time.perf_counter() - t0
        before = rss(daemon_pid)
        peak = before
        for rep in range(cfg.replay_reps):
            for what in (("daemon", "sqlite3") if rep % 2 == 0 else ("sqlite3", "daemon")):
                if what == "sqlite3":
                    rate, seqs = await asyncio.to_thread(sqlite_read, raw_path, run_id)
                    check_ids("sqlite3 read", seqs, want)
                    base.append(rate)
                    continue
                r0 = rss(daemon_pid)
                with RssSampler({"daemon": daemon_pid}, 0.01) as mem:
                    t0 = time.perf_counter()
                    reader = await open_sse(target, run_id)
                    await asyncio.wait_for(reader.closed, 120)
                    elapsed = time.perf_counter() - t0
                check_ids("replay", reader.seqs, want)
                if not reader.frames.ended_terminal:
                    raise RuntimeError("the replay did not end on run.status completed")
                rates.append(len(reader.seqs) / elapsed)
                peak = max(peak, mem.peak["daemon"])
                per_rep.append({"rate": round(rates[-1]), "rss_before_mb": round(r0 / MB, 1),
                                "rss_peak_mb": round(mem.peak["daemon"] / MB, 1),
                                "rss_after_mb": round(mem.last["daemon"] / MB, 1),
                                "samples": mem.samples, "bytes": reader.frames.nbytes})
            log(f"replay_100k rep {rep + 1}: daemon {rates[-1]:,.0f}/s, sqlite3 "
                f"{base[-1]:,.0f}/s; daemon RSS peak {per_rep[-1]['rss_peak_mb']} MB")
        after = rss(daemon_pid)
    finally:
        owned.close_stack(stack)
    rate, base_rate = statistics.median(rates), statistics.median(base)
    growth = (peak - before) / MB
    notes = {"events": cfg.replay_events, "reps": cfg.replay_reps,
             "compacted_in_s": round(compact_s, 2), **stored_bytes(db_path, raw_path),
             "rates": [round(x) for x in rates], "sqlite3_rates": [round(x) for x in base],
             "per_rep": per_rep}
    base_what = "raw sqlite3 read of the same rows (one SELECT, iterated)"
    return [
        Figure("replay_100k", rate, "events/s", base_rate, base_what,
               Target("ratio", ">=", 0.8), notes),
        Figure("replay_100k.rate", rate, "events/s", base_rate, base_what,
               Target("value", ">=", 200_000)),
        Figure("replay_100k.rss_growth", growth, "MB", before / MB,
               "daemon RSS before the first replay (MB)", Target("value", "<=", 20.0),
               {"rss_before_mb": round(before / MB, 1), "rss_peak_mb": round(peak / MB, 1),
                "rss_after_mb": round(after / MB, 1)}),
    ]
