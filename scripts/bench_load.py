"""Load figures (issue "Fault drills, load and the benchmark report"); run through `scripts/bench`.

  sse_fanout_200     200 SSE clients on one streaming run through the front: delivered
                     events/s (all clients)  vs  1 client's events/s x 200 (the ideal); every
                     client must get every event once, in order (checked, else the section fails)
  history_1m         1,000 runs / 1,000,000 events in one session: p99 of list sessions, list
                     the session's runs, open a run, on the daemon socket  vs  the same SQL in
                     process with sqlite3
  replay_100k        replay of a 100,000-event run on the daemon socket, events/s, with the
                     daemon's RSS sampled  vs  a raw sqlite3 read of the same rows
  slow_client        a fast run with 5 normal SSE clients and one that reads one event per second
                     through a tiny receive buffer  vs  the same run without the slow client
"""

from __future__ import annotations

import asyncio
import random
import socket
import sqlite3
import statistics
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import bench_core as core
import orjson
from bench_common import (
    MB,
    CpuMeter,
    FrontUnavailable,
    P,
    RssSampler,
    SseReader,
    SseTarget,
    call,
    check_ids,
    dechunk,
    direct_session,
    open_sse,
    parse_sse_body,
    rss,
    sse_request,
    start_checked_front,
    start_run,
)
from bench_core import Figure, Owned, Target, log, pct

from llamon_playground.daemon.store.ids import new_run_id
from tests.support.procs import Stack


@dataclass(frozen=True)
class LoadBenchConfig:
    fanout_clients: int = 200
    fanout_words: int = 3000
    fanout_delay_ms: int = 1
    fanout_reps: int = 2
    connect_wave: int = 25
    history_runs: int = 1000
    history_events_per_run: int = 1000
    history_requests: int = 200
    replay_events: int = 100_000
    replay_reps: int = 3
    slow_words: int = 8000
    slow_delay_ms: int = 0
    slow_read_s: float = 10.0
    slow_normal_clients: int = 5
    slow_rcvbuf: int = 4096
    slow_controls: int = 2

    @classmethod
    def make(cls, quick: bool) -> LoadBenchConfig:
        if quick:
            return cls(fanout_words=1000, fanout_reps=1, history_requests=60, replay_reps=2,
                       slow_words=3000, slow_read_s=4.0, slow_controls=1)
        return cls()


def stream_text(words: int) -> str:
    return "stream " + " ".join(f"w{i:05d}" for i in range(words))


@dataclass
class LiveRun:
    """A daemon (+ front when it lets us in) with a Ready Host, for the live-run sections."""

    stack: Stack
    direct: aiohttp.ClientSession
    session_id: str
    target: SseTarget  # where the measured clients connect
    observer: SseTarget  # the daemon socket
    via: str
    pids: dict[str, int] = field(default_factory=dict)


async def open_live(owned: Owned, prefix: str, delay_ms: int) -> LiveRun:
    stack = owned.start(owned.project(prefix), extra_env={"ECHO_CHUNK_DELAY_MS": str(delay_ms)})
    assert stack.daemon is not None
    direct = direct_session(stack, limit=0)
    sock = str(stack.settings.socket_path)
    pids = {"daemon": stack.daemon.pid}
    try:
        front_pid, url, headers = await start_checked_front(stack)
        target = SseTarget("tcp", int(url.rsplit(":", 1)[1]), headers)
        via = "front"
        pids["front"] = front_pid
    except FrontUnavailable as exc:
        log(f"{prefix}: front unavailable, measuring on the daemon socket instead: {exc}")
        target, via = SseTarget("unix", sock), f"daemon socket (front unavailable: {exc})"
    status = await call(direct, "POST", "host/start")
    if status["state"] != "ready":
        raise RuntimeError(f"the Host is not Ready: {status}")
    pids["host"] = int(status["pid"])
    session = await call(direct, "POST", "sessions", {"title": prefix}, 201)
    owned.note(stack)
    return LiveRun(stack, direct, session["id"], target, SseTarget("unix", sock), via, pids)


async def read_truth(live: LiveRun, run_id: str) -> list[int]:
    """Every id of a finished run, replayed from the start on the daemon socket."""
    reader = await open_sse(live.observer, run_id)
    await asyncio.wait_for(reader.closed, 60)
    if reader.status != 200 or not reader.ended_terminal:
        raise RuntimeError(f"truth replay of {run_id}: status {reader.status}, "
                           f"last {reader.last_frame[:200]!r}")
    return reader.seqs


def close_all(readers: list[SseReader]) -> None:
    for r in readers:
        if r.transport is not None and not r.transport.is_closing():
            r.transport.close()


# -- sse_fanout_200 ----------------------------------------------------------------------------

async def fanout_once(live: LiveRun, cfg: LoadBenchConfig, n: int, words: int) -> dict[str, Any]:
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
        close_all(readers)
    want = await read_truth(live, run_id)
    check_ids("observer (daemon socket)", observer.seqs, want)
    for i, c in enumerate(clients):
        if c.status != 200 or c.error:
            raise RuntimeError(f"client {i}: {c.error or c.status}")
        check_ids(f"fan-out client {i} of {n}", c.seqs, want)
        if not c.ended_terminal:
            raise RuntimeError(f"client {i} did not end on the terminal run.status")
    total = sum(len(c.seqs) for c in clients)
    ends = [c.t_last for c in clients if c.t_last is not None]
    window = max(ends) - t0
    assert observer.t_last is not None
    lags = [(t - observer.t_last) * 1000 for t in ends]
    # How well the clients kept up with the run as it went, whatever the run's own pace:
    # 1.0 = the last client finished when the observer on the daemon socket did.
    kept_pace = (observer.t_last - t0) / window
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
    cfg = LoadBenchConfig.make(quick)
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
        await live.direct.close()
        owned.close_stack(live.stack)

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
        fig.append(Figure(f"sse_fanout_{n}.{who}_cpu", med(n, lambda r: r["cpu_pct"][who]),
                          "% core", med(1, lambda r: r["cpu_pct"][who]), base, None))
        fig.append(Figure(f"sse_fanout_{n}.{who}_rss_peak",
                          med(n, lambda r: r["rss_mb"][who]["peak"]), "MB",
                          med(1, lambda r: r["rss_mb"][who]["peak"]), base, None))
    return fig


# -- history_1m --------------------------------------------------------------------------------

def run_events(task_id: str, deltas: int, text_total: str) -> list[tuple[str, bytes]]:
    """(kind, payload) of a completed `stream` run, in the shape the daemon writes them."""
    d = orjson.dumps
    head = [("run.status", {"status": "queued"}),
            ("run.status", {"status": "preparing", "previous": "queued"}),
            ("run.phase", {"phase": "validate", "state": "started"}),
            ("run.phase", {"phase": "validate", "state": "completed", "warnings": []}),
            ("run.phase", {"phase": "save", "state": "skipped"}),
            ("run.phase", {"phase": "restart", "state": "skipped"}),
            ("run.phase", {"phase": "ready", "state": "started"}),
            ("run.phase", {"phase": "ready", "state": "completed", "generation": 1}),
            ("run.status", {"status": "running", "previous": "preparing"}),
            ("run.phase", {"phase": "send", "state": "started"}),
            ("trace", {"type": "node.start", "node": "echo"})]
    tail = [("trace", {"type": "node.end", "node": "echo"}),
            ("trace", {"type": "evaluation.result", "evaluator": "word_count", "score": deltas,
                       "passStatus": "fail", "node": "echo", "scope": "node"}),
            ("trace", {"type": "evaluation.result", "evaluator": "mentions_hello",
                       "score": 0.0, "passStatus": "fail", "reason": "no hello in the answer"}),
            ("run.phase", {"phase": "send", "state": "completed", "task_state": "completed"}),
            ("run.output", {"parts": [{"kind": "text", "text": text_total}]}),
            ("run.phase", {"phase": "complete", "state": "completed", "status": "completed"}),
            ("run.status", {"status": "completed", "previous": "running"})]
    delta = d({"text": "tok ", "artifact_id": f"{task_id}-echo"})
    return ([(k, d(p)) for k, p in head] + [("output.delta", delta)] * deltas
            + [(k, d(p)) for k, p in tail])


HEAD_TAIL_EVENTS = 18  # run_events' framing around the deltas


def build_history(db_path: Path, session_id: str, context_id: str, runs: int,
                  events_per_run: int) -> list[str]:
    """`runs` completed runs of `events_per_run` events each, straight into the database
    (daemon/migrations.py's schema; the daemon is stopped meanwhile)."""
    deltas = events_per_run - HEAD_TAIL_EVENTS
    text_total = "tok " * deltas
    output = orjson.dumps([{"kind": "text", "text": text_total}]).decode()
    scores = orjson.dumps([
        {"evaluator": "word_count", "score": deltas, "passStatus": "fail", "scope": "node",
         "node": "echo"},
        {"evaluator": "mentions_hello", "score": 0.0, "reason": "no hello in the answer",
         "passStatus": "fail"}]).decode()
    base = time.time() - runs * 60
    conn = sqlite3.connect(db_path, isolation_level=None)
    run_ids = []
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=OFF")  # a fixture; the daemon writes with FULL
        conn.execute("PRAGMA cache_size=-200000")
        seq = int(conn.execute("SELECT COALESCE(MAX(seq), 0) FROM events").fetchone()[0])
        conn.execute("BEGIN IMMEDIATE")
        for i in range(runs):
            run_id = new_run_id()
            run_ids.append(run_id)
            task_id = f"task-{i:05d}"
            t = base + i * 60
            created = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + ".000Z"
            ended = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t + 2)) + ".000Z"
            stored_input = orjson.dumps({"parts": [{"kind": "text",
                                                    "text": f"bench question {i}"}],
                                         "metadata": {}, "changed_files": [],
                                         "revision": None}).decode()
            conn.execute(
                "INSERT INTO runs (id, session_id, status, created_at, started_at, ended_at, "
                "duration_ms, context_id, task_id, input, output, scores, generation) "
                "VALUES (?, ?, 'completed', ?, ?, ?, ?, ?, ?, ?, ?, ?, 1)",
                (run_id, session_id, created, created, ended, 2000.0, context_id, task_id,
                 stored_input, output, scores))
            events = run_events(task_id, deltas, text_total)
            rows = [(seq + 1 + j, run_id, kind, payload, created)
                    for j, (kind, payload) in enumerate(events)]
            seq += len(rows)
            conn.executemany(core.INSERT_EVENT, rows)
        conn.execute("COMMIT")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    return run_ids


NO_WATCH = {"LLAMON_PLAYGROUND_WATCH": "0"}  # fixtures are written while no daemon runs


async def bench_history(quick: bool, owned: Owned) -> list[Figure]:
    cfg = LoadBenchConfig.make(quick)
    project = owned.project("lpbm")
    session, db_path = await owned.seeded_session(project, "one million events", NO_WATCH)
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
            "AND CAST(e.payload AS TEXT) LIKE '%\"status\":\"completed\"%'").fetchone()[0]
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
    sid = session["id"]
    rng = random.Random(7)
    paths = {"list_sessions": lambda: f"{P}/sessions",
             "list_runs": lambda: f"{P}/sessions/{sid}/runs",
             "run_detail": lambda: f"{P}/runs/{rng.choice(run_ids)}"}
    # The API pages lists (100 by default); the baseline reads the same first page.
    sql = {"list_sessions": ("SELECT s.*, (SELECT COUNT(*) FROM runs r WHERE "
                             "r.session_id = s.id) AS run_count FROM sessions s ORDER BY s.rowid "
                             "LIMIT 101", lambda: ()),
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
                          "daemon_rss_mb_after": round(daemon_rss / MB, 1)})
        figures.append(Figure(f"history_1m.{name}_p99", pct(s, 99), "ms", pct(b, 99),
                              "same SQL, sqlite3 in process (execute+fetchall)",
                              Target("value", "<=", 50.0), notes))
    return figures


def check_history_answer(name: str, doc: Any, cfg: LoadBenchConfig) -> None:
    if name == "list_sessions":
        ok = len(doc["sessions"]) == 1 and doc["sessions"][0]["run_count"] == cfg.history_runs
    elif name == "list_runs":  # the first page (100 by default) of the session's runs
        ok = len(doc["runs"]) == min(100, cfg.history_runs) and (
            doc["next_after"] is not None) == (cfg.history_runs > 100)
    else:
        ok = doc["status"] == "completed"
    if not ok:
        raise RuntimeError(f"{name}: unexpected answer {str(doc)[:300]}")


# -- replay_100k -------------------------------------------------------------------------------

def sqlite_read(db_path: Path, run_id: str) -> tuple[float, list[int]]:
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        t0 = time.perf_counter()
        seqs = [row[0] for row in conn.execute(
            "SELECT seq, kind, payload FROM events WHERE run_id = ? ORDER BY seq", (run_id,))]
        elapsed = time.perf_counter() - t0
    finally:
        conn.close()
    return len(seqs) / elapsed, seqs


async def bench_replay(quick: bool, owned: Owned) -> list[Figure]:
    cfg = LoadBenchConfig.make(quick)
    project = owned.project("lpbr")
    session, db_path = await owned.seeded_session(project, "replay", NO_WATCH)
    run_id = core.insert_finished_run(db_path, session["id"], session["context_id"],
                                      cfg.replay_events)
    _, want = sqlite_read(db_path, run_id)
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
        before = rss(daemon_pid)
        peak = before
        for rep in range(cfg.replay_reps):
            for what in (("daemon", "sqlite3") if rep % 2 == 0 else ("sqlite3", "daemon")):
                if what == "sqlite3":
                    rate, seqs = await asyncio.to_thread(sqlite_read, db_path, run_id)
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
                if not reader.ended_terminal:
                    raise RuntimeError("the replay did not end on run.status completed")
                rates.append(len(reader.seqs) / elapsed)
                peak = max(peak, mem.peak["daemon"])
                per_rep.append({"rate": round(rates[-1]), "rss_before_mb": round(r0 / MB, 1),
                                "rss_peak_mb": round(mem.peak["daemon"] / MB, 1),
                                "rss_after_mb": round(mem.last["daemon"] / MB, 1),
                                "samples": mem.samples, "bytes": reader.nbytes})
            log(f"replay_100k rep {rep + 1}: daemon {rates[-1]:,.0f}/s, sqlite3 "
                f"{base[-1]:,.0f}/s; daemon RSS peak {per_rep[-1]['rss_peak_mb']} MB")
        after = rss(daemon_pid)
    finally:
        owned.close_stack(stack)
    rate, base_rate = statistics.median(rates), statistics.median(base)
    growth = (peak - before) / MB
    notes = {"events": cfg.replay_events, "reps": cfg.replay_reps,
             "rates": [round(x) for x in rates], "sqlite3_rates": [round(x) for x in base],
             "per_rep": per_rep}
    base_what = "raw sqlite3 read of the same rows (one SELECT, iterated)"
    return [
        Figure("replay_100k", rate, "events/s", base_rate, base_what,
               Target("ratio", ">=", 0.5), notes),
        Figure("replay_100k.rate", rate, "events/s", base_rate, base_what,
               Target("value", ">=", 200_000)),
        Figure("replay_100k.rss_growth", growth, "MB", before / MB,
               "daemon RSS before the first replay (MB)", Target("value", "<=", 20.0),
               {"rss_before_mb": round(before / MB, 1), "rss_peak_mb": round(peak / MB, 1),
                "rss_after_mb": round(after / MB, 1)}),
    ]


# -- slow_client -------------------------------------------------------------------------------

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
    except Exception as exc:  # reported by the caller
        out["error"] = f"{type(exc).__name__}: {exc}"


async def slow_once(live: LiveRun, cfg: LoadBenchConfig, with_slow: bool) -> dict[str, Any]:
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
        close_all(readers)
    want = await read_truth(live, run_id)
    for i, r in enumerate(readers):
        check_ids(f"normal client {i}", r.seqs, want)
    run = await call(live.direct, "GET", f"runs/{run_id}")
    if run["status"] != "completed":
        raise RuntimeError(f"run {run_id} ended {run['status']}")
    done = [(r.t_last - t0) * 1000 for r in readers if r.t_last is not None]
    result: dict[str, Any] = {"events": len(want), "run_duration_ms": run["duration_ms"],
                              "normal_done_ms": round(max(done), 1),
                              "normal_done_all_ms": [round(x) for x in done],
                              "normal_wall_s": round(t_normal - t0, 3),
                              "cpu_pct": cpu.pct(), "rss_mb": mem.mb()}
    if with_slow:
        if "error" in out:
            raise RuntimeError(f"slow client: {out['error']}")
        raw = out.pop("raw")
        head, _, body = raw.partition(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 200"):
            raise RuntimeError(f"slow client: {head[:200]!r}")
        chunked = b"transfer-encoding: chunked" in head.lower()
        body, finished = dechunk(body) if chunked else (body, True)
        seqs, last_kind, last_frame = parse_sse_body(body)
        check_ids("slow client", seqs, want)
        if not finished or last_kind != b"run.status" or b'"completed"' not in last_frame:
            raise RuntimeError("slow client: the stream did not end on run.status completed")
        result["slow"] = {**out, "events": len(seqs), "bytes": len(raw)}
    return result


async def bench_slow_client(quick: bool, owned: Owned) -> list[Figure]:
    cfg = LoadBenchConfig.make(quick)
    live = await open_live(owned, "lpbs", cfg.slow_delay_ms)
    control: list[dict[str, Any]] = []
    slow: list[dict[str, Any]] = []
    try:
        await slow_once(live, LoadBenchConfig(slow_words=1000), False)  # warm-up
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
        await live.direct.close()
        owned.close_stack(live.stack)
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


# -- compare_1mb ---------------------------------------------------------------------------------

async def bench_compare(quick: bool, owned: Owned) -> list[Figure]:
    """Compare of two 1 MB texts (the issue: an answer within a second; diff work capped).
    Baseline: difflib.unified_diff of the first 2,000 lines of each, uncapped."""
    import difflib

    from llamon_playground.daemon.data.compare import compare_runs

    def run(run_id: str, body: str) -> dict[str, Any]:
        return {"id": run_id, "session_id": "ses", "status": "completed", "duration_ms": 1.0,
                "output": [{"kind": "text", "text": body}], "input": {"parts": []},
                "scores": []}

    left = "\n".join(f"left line {i} {i * 7919 % 10007}" for i in range(60000))[:1_000_000]
    right = "\n".join(f"right line {i} {i * 104729 % 10007}" for i in range(60000))[:1_000_000]
    samples, base = [], []
    for _ in range(2 if quick else 5):
        t = time.perf_counter()
        got = compare_runs(run("run_a", left), run("run_b", right))
        orjson.dumps(got)
        samples.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        "".join(difflib.unified_diff(left.splitlines(True)[:2000],
                                     right.splitlines(True)[:2000]))
        base.append((time.perf_counter() - t) * 1000)
    return [Figure("compare_1mb", statistics.median(samples), "ms", statistics.median(base),
                   "difflib on the first 2,000 lines", Target("value", "<=", 1000),
                   {"truncated": got["text"]["truncated"], "samples_ms": samples})]


SECTIONS = (
    ("sse_fanout_200", bench_sse_fanout, ("sse_fanout_200",)),
    ("history_1m", bench_history, ("history_1m",)),
    ("replay_100k", bench_replay, ("replay_100k",)),
    ("slow_client", bench_slow_client, ("slow_client",)),
    ("compare_1mb", bench_compare, ("compare_1mb",)),
)
