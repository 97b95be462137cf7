"""The llamon Playground benchmark (run it through `scripts/bench`).

Every figure is quoted against a baseline measured in the same run, on the same machine,
right next to it (the machines have 2 noisy cores, so absolute numbers drift between runs):

  store_append          Store.append_event events/s  vs  raw sqlite3 executemany (1 txn)
  sse_front_vs_direct   SSE replay of 100k events through the front  vs  the daemon socket
  delta_latency         output.delta arrival: front minus direct (same run, same moment)
                        vs  direct minus direct (the measuring noise floor); and POST->first delta
  run_create_202        POST /sessions/{id}/runs latency through the front  vs  direct
  request_relay         GET / POST /sessions requests/s through the front  vs  direct
                        (+ GET /health as a control: no SQLite on the daemon side)

The processes (daemon, fronts, the example Host) are started through tests/support/procs.Stack
and torn down in `finally`; only loopback TCP and Unix sockets are used.

More sections, registered below (extra_sections) and run after these:
  bench_host.py   host_restart (.api, .save), daemon_idle_cpu, daemon_rss
  bench_load.py   sse_fanout_200, history_1m, replay_100k, slow_client
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import datetime as dt
import json
import os
import platform
import re
import resource
import shutil
import signal
import sqlite3
import statistics
import sys
import tempfile
import time
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
# Run as a script, this module is __main__: the sections in bench_host / bench_load import it
# as `bench_core`, and must get this very module (not a second copy).
sys.modules.setdefault("bench_core", sys.modules[__name__])

import aiohttp  # noqa: E402
import orjson  # noqa: E402
import psutil  # noqa: E402
from bench_common import RawHttpStream, front_headers  # noqa: E402

from llamon_playground.common.config import build_settings  # noqa: E402
from llamon_playground.daemon.store.database import (  # noqa: E402
    Store,
    split_sql,  # noqa: E402
    utcnow,
)
from llamon_playground.daemon.store.ids import new_run_id  # noqa: E402
from llamon_playground.daemon.store.migrations import MIGRATIONS  # noqa: E402
from tests.support.api import Api  # noqa: E402
from tests.support.procs import Stack, copy_example, process_tree, short_tmpdir  # noqa: E402

P = "/api/playground/v1"
# The daemon's own events table and index, taken from its first migration.
EVENTS_DDL = "\n".join(stmt for stmt in split_sql(MIGRATIONS[0])
                       if stmt.startswith(("CREATE TABLE events", "CREATE INDEX events_")))
INSERT_EVENT = "INSERT INTO events (seq, run_id, kind, payload, ts) VALUES (?, ?, ?, ?, ?)"


# -- configuration ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Config:
    quick: bool
    store_events: int = 100_000
    store_burst: int = 1000
    store_reps: int = 5
    sse_events: int = 100_000
    sse_reps: int = 3
    latency_words: int = 2000
    chunk_delay_ms: int = 2
    create_samples: int = 100
    relay_requests: int = 2000
    relay_concurrency: int = 8
    relay_reps: int = 5

    @classmethod
    def make(cls, quick: bool) -> Config:
        if quick:
            return cls(quick=True, store_reps=2, sse_reps=2, latency_words=400,
                       create_samples=20, relay_requests=300, relay_reps=2)
        return cls(quick=False)


# -- figures ------------------------------------------------------------------------------------

@dataclass
class Target:
    of: str  # "ratio" or "value"
    op: str  # ">=" or "<="
    limit: float

    def text(self, unit: str) -> str:
        if self.of == "ratio":
            return f"ratio {self.op} {self.limit:g}"
        return f"{self.op} {self.limit:g} {unit}"

    def met(self, value: float | None, ratio: float | None) -> bool | None:
        x = ratio if self.of == "ratio" else value
        if x is None:
            return None
        return x >= self.limit if self.op == ">=" else x <= self.limit


@dataclass
class Figure:
    name: str
    value: float | None
    unit: str
    baseline: float | None
    baseline_what: str
    target: Target | None = None
    notes: dict[str, Any] = field(default_factory=dict)

    @property
    def ratio(self) -> float | None:
        if self.value is None or self.baseline is None or self.baseline == 0:
            return None
        return self.value / self.baseline

    @property
    def met(self) -> bool | None:
        return self.target.met(self.value, self.ratio) if self.target else None

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name, "value": self.value, "unit": self.unit,
            "baseline": self.baseline, "baseline_what": self.baseline_what,
            "ratio": self.ratio,
            "target": None if self.target is None else {
                "of": self.target.of, "op": self.target.op, "limit": self.target.limit,
                "text": self.target.text(self.unit)},
            "met": self.met, "notes": self.notes,
        }


def pct(xs: list[float], p: float) -> float:
    """Linear-interpolated percentile (p in 0..100)."""
    if not xs:
        raise ValueError("no samples")
    s = sorted(xs)
    k = (len(s) - 1) * p / 100
    lo = int(k)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def log(msg: str) -> None:
    print(f"  .. {msg}", file=sys.stderr, flush=True)


# -- owned processes ----------------------------------------------------------------------------

class Owned:
    """Every Stack and temp dir this benchmark made, so that teardown never misses one."""

    def __init__(self) -> None:
        self.stacks: list[Stack] = []
        self.dirs: list[Path] = []
        self.pids: set[int] = set()
        self.child_cpu = 0.0  # CPU seconds our daemons, fronts and Hosts used (noise accounting)

    def tmpdir(self, prefix: str) -> Path:
        path = short_tmpdir(prefix)
        self.dirs.append(path)
        return path

    def stack(self, project: Path, runtime_base: Path, extra_env: dict[str, str] | None = None
              ) -> Stack:
        stack = Stack(project, runtime_base, extra_env=extra_env)
        self.stacks.append(stack)
        return stack

    def project(self, prefix: str) -> Path:
        """A fresh copy of the example project, in a fresh temp dir of ours."""
        return copy_example(self.tmpdir(prefix))

    def start(self, project: Path, extra_env: dict[str, str] | None = None) -> Stack:
        """A running daemon for `project`, on a runtime dir of its own beside the project."""
        runtime = Path(tempfile.mkdtemp(prefix="rt", dir=project.parent))
        stack = self.stack(project, runtime, extra_env)
        stack.start_daemon()
        return stack

    async def seeded_session(self, project: Path, title: str,
                             extra_env: dict[str, str] | None = None
                             ) -> tuple[dict[str, Any], Path]:
        """Create one session through a daemon, then stop it (SIGTERM: the database closes
        cleanly), so a fixture can be written straight into the SQLite file: (the session,
        that file)."""
        stack = self.start(project, extra_env)
        api = Api.for_socket(str(stack.settings.socket_path))
        try:
            session: dict[str, Any] = await api.ok("POST", "sessions", {"title": title}, 201)
        finally:
            await api.close()
            self.close_stack(stack)
        return session, stack.settings.db_path

    def note(self, stack: Stack) -> None:
        """Remember every pid of the stack's trees (checked for leftovers at the end)."""
        procs = ([stack.daemon] if stack.daemon else []) + stack.fronts
        for proc in procs:
            for p in process_tree(proc.pid):
                self.pids.add(p.pid)

    def close_stack(self, stack: Stack) -> None:
        self.note(stack)
        stack.remember_hosts()
        self.pids.update(stack.hosts_seen)
        procs = ([stack.daemon] if stack.daemon else []) + stack.fronts
        self.child_cpu += cpu_seconds([p.pid for proc in procs for p in process_tree(proc.pid)])
        try:
            stack.close()
        finally:
            if stack in self.stacks:
                self.stacks.remove(stack)

    def close_all(self) -> list[int]:
        for stack in list(self.stacks):
            try:
                self.close_stack(stack)
            except Exception as exc:  # keep tearing the others down
                print(f"teardown error: {exc}", file=sys.stderr)
        for path in self.dirs:
            shutil.rmtree(path, ignore_errors=True)
        self.dirs.clear()
        alive = []
        for pid in sorted(self.pids):
            try:
                proc = psutil.Process(pid)
                if proc.status() != psutil.STATUS_ZOMBIE:
                    alive.append(pid)
            except psutil.Error:
                pass
        return alive


def busy_seconds() -> float:
    """CPU seconds the whole machine spent not idle, summed over all CPUs."""
    t = psutil.cpu_times()
    return sum(t) - t.idle - getattr(t, "iowait", 0.0)


def reaped_children_cpu() -> float:
    """CPU seconds of this process's descendants that have exited and were waited for."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def cpu_seconds(pids: list[int]) -> float:
    total = 0.0
    for pid in pids:
        try:
            t = psutil.Process(pid).cpu_times()
            total += t.user + t.system
        except psutil.Error:
            pass
    return total


# -- raw SSE client (timestamps each arrival; measures the server, not a client parser) ---------

FRAME_RE = re.compile(rb"id: (\d+)\nevent: ([^\n]*)\n")


class RawSse(RawHttpStream):
    """One HTTP/1.1 GET of an SSE stream; records (arrival time, body length) per read."""

    def __init__(self, request: bytes) -> None:
        super().__init__(request)
        self.body = self.received
        self.arrivals: list[tuple[float, int]] = []

    def on_body(self, arrived: float) -> None:
        if self.body:
            self.arrivals.append((arrived, len(self.body)))

    def frames(self) -> list[tuple[int, str, float, bool]]:
        """(seq, kind, arrival time, arrived in the first read) for every frame."""
        ends = [n for _, n in self.arrivals]
        first_len = ends[0] if ends else 0
        body = bytes(self.body)
        out = []
        for m in FRAME_RE.finditer(body):
            end = body.find(b"\n\n", m.end())
            if end < 0:
                break
            end += 2
            i = bisect.bisect_left(ends, end)
            out.append((int(m.group(1)), m.group(2).decode(), self.arrivals[i][0],
                        end <= first_len))
        return out


async def open_raw_sse(target: tuple[Any, ...], run_id: str) -> RawSse:
    """target: ("tcp", port[, headers]) for the front, ("unix", socket path) for the daemon."""
    kind, where, *rest = target
    extra = "".join(f"{k}: {v}\r\n" for k, v in (rest[0] if rest else {}).items())
    loop = asyncio.get_running_loop()
    host = f"127.0.0.1:{where}" if kind == "tcp" else "daemon"
    request = (f"GET {P}/runs/{run_id}/events HTTP/1.1\r\nHost: {host}\r\n"
               f"Accept: text/event-stream\r\n{extra}Connection: close\r\n\r\n").encode()
    proto = RawSse(request)
    if kind == "tcp":
        await loop.create_connection(lambda: proto, "127.0.0.1", where)
    else:
        await loop.create_unix_connection(lambda: proto, where)
    return proto


async def count_sse(http: aiohttp.ClientSession, run_id: str) -> tuple[int, bytes, int]:
    """Read a run's SSE stream to its end; count frames in the raw bytes (no JSON parsing)."""
    count = 0
    total = 0
    tail = b"\n"
    last = b""
    async with http.get(f"{P}/runs/{run_id}/events",
                        timeout=aiohttp.ClientTimeout(total=300)) as resp:
        if resp.status != 200:
            raise RuntimeError(f"events answered {resp.status}: {await resp.text()}")
        async for chunk in resp.content.iter_any():
            buf = tail + chunk
            count += buf.count(b"\nid: ")
            tail = buf[-4:]
            total += len(chunk)
            last = (last + chunk)[-400:]
    return count, last, total


# -- 1. store_append ----------------------------------------------------------------------------

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


async def bench_store_append(cfg: Config, owned: Owned) -> list[Figure]:
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


# -- 2. sse_front_vs_direct ---------------------------------------------------------------------

def insert_finished_run(db_path: Path, session_id: str, context_id: str, n: int) -> str:
    """A completed run with n events (n-1 output.delta, then run.status completed)."""
    run_id = new_run_id()
    now = utcnow()
    conn = sqlite3.connect(db_path, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute("PRAGMA foreign_keys=ON")
        first = int(conn.execute("SELECT COALESCE(MAX(seq), 0) FROM events").fetchone()[0]) + 1
        delta = orjson.dumps({"text": "tok ", "artifact_id": "bench-echo"})
        rows = [(first + i, run_id, "output.delta", delta, now) for i in range(n - 1)]
        rows.append((first + n - 1, run_id, "run.status", orjson.dumps({"status": "completed"}),
                     now))
        stored_input = orjson.dumps({"parts": [{"kind": "text", "text": "bench"}],
                                     "metadata": {}, "changed_files": [],
                                     "revision": None}).decode()
        conn.execute("BEGIN IMMEDIATE")
        conn.execute(
            "INSERT INTO runs (id, session_id, status, created_at, started_at, ended_at, "
            "duration_ms, context_id, input, output) VALUES (?, ?, 'completed', ?, ?, ?, ?, ?, "
            "?, ?)", (run_id, session_id, now, now, now, 1.0, context_id, stored_input,
                      orjson.dumps([{"kind": "text", "text": "tok " * 10}]).decode()))
        conn.executemany(INSERT_EVENT, rows)
        conn.execute("COMMIT")
    finally:
        conn.close()
    return run_id


async def bench_sse(cfg: Config, owned: Owned) -> list[Figure]:
    project = owned.project("lpbe")
    doc, db_path = await owned.seeded_session(project, "bench sse")
    t0 = time.perf_counter()
    run_id = insert_finished_run(db_path, doc["id"], doc["context_id"], cfg.sse_events)
    log(f"sse: wrote {cfg.sse_events:,} events in {time.perf_counter() - t0:.2f} s")
    stack = owned.start(project)
    front, url = stack.start_front()
    assert stack.daemon is not None
    daemon_pid, front_pid = stack.daemon.pid, front.pid
    direct = aiohttp.ClientSession(
        connector=aiohttp.UnixConnector(path=str(stack.settings.socket_path)),
        base_url="http://daemon")
    via_front = aiohttp.ClientSession(base_url=url, headers=front_headers(stack))
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
                if count != cfg.sse_events or b'"status":"completed"' not in last:
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
                   Target("ratio", ">=", 0.9),
                   {"events": cfg.sse_events, "reps": cfg.sse_reps,
                    "front_rates": [round(x) for x in rates["front"]],
                    "direct_rates": [round(x) for x in rates["direct"]], "cpu": cpu})]


# -- 3/4/5 share one live stack -----------------------------------------------------------------

class Live:
    """A daemon + front with a Ready example Host (chunk delay set), plus clients for both ways."""

    def __init__(self, cfg: Config, owned: Owned) -> None:
        self.cfg = cfg
        self.owned = owned
        self.stack: Stack | None = None
        self.url = ""
        self.port = 0
        self.front_api: Api | None = None
        self.direct_api: Api | None = None
        self.session_id = ""

    async def start(self) -> None:
        self.stack = self.owned.start(
            self.owned.project("lpbl"),
            extra_env={"ECHO_CHUNK_DELAY_MS": str(self.cfg.chunk_delay_ms)})
        _, self.url = self.stack.start_front()
        self.port = int(self.url.rsplit(":", 1)[1])
        self.front_api = Api(aiohttp.ClientSession(base_url=self.url,
                                                   headers=front_headers(self.stack)))
        self.direct_api = Api.for_socket(str(self.stack.settings.socket_path))
        self.session_id = await self.front_api.session()
        t0 = time.perf_counter()
        await self.run_to_end(self.front_api, "stream warm up the host")
        log(f"live stack up; first run (Host start) took {time.perf_counter() - t0:.2f} s")
        self.owned.note(self.stack)

    def api(self, way: str) -> Api:
        api = self.front_api if way == "front" else self.direct_api
        assert api is not None
        return api

    def target(self, way: str) -> tuple[Any, ...]:
        assert self.stack is not None
        return ("tcp", self.port, front_headers(self.stack)) if way == "front" else (
            "unix", str(self.stack.settings.socket_path))

    async def run_to_end(self, api: Api, text: str) -> str:
        run_id = await api.start_run(self.session_id, text)
        count, last, _ = await count_sse(api.http, run_id)
        if b'"status":"completed"' not in last:
            raise RuntimeError(f"run {run_id} did not complete: {last[-200:]!r}")
        return run_id

    async def close(self) -> None:
        for api in (self.front_api, self.direct_api):
            if api is not None:
                await api.close()
        if self.stack is not None:
            self.owned.close_stack(self.stack)


async def bench_delta_latency(cfg: Config, live: Live) -> list[Figure]:
    api = live.api("front")
    words = " ".join(f"w{i:05d}" for i in range(cfg.latency_words))
    body = {"parts": [{"kind": "text", "text": f"stream {words}"}]}
    t0 = time.perf_counter()
    async with api.http.post(f"{P}/sessions/{live.session_id}/runs",
                             data=orjson.dumps(body),
                             headers={"Content-Type": "application/json"}) as resp:
        doc = orjson.loads(await resp.read())
        if resp.status != 202:
            raise RuntimeError(f"POST runs answered {resp.status}: {doc}")
    t202 = time.perf_counter()
    run_id = doc["run_id"]
    clients = await asyncio.gather(open_raw_sse(live.target("front"), run_id),
                                   open_raw_sse(live.target("direct"), run_id),
                                   open_raw_sse(live.target("direct"), run_id))
    timeout = 60 + cfg.latency_words * cfg.chunk_delay_ms / 1000 * 5
    await asyncio.wait_for(asyncio.gather(*(c.closed for c in clients)), timeout)
    front, direct_a, direct_b = (c.frames() for c in clients)
    for name, c, frames in zip(("front", "direct_a", "direct_b"), clients,
                               (front, direct_a, direct_b)):
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
    gaps = [(y - x) * 1000 for x, y in zip(arrivals_a, arrivals_a[1:])]
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


async def bench_run_create(cfg: Config, live: Live) -> list[Figure]:
    body = orjson.dumps({"parts": [{"kind": "text", "text": "stream x"}]})
    headers = {"Content-Type": "application/json"}
    samples: dict[str, list[float]] = {"front": [], "direct": []}
    conflicts = {"front": 0, "direct": 0}

    async def one(way: str, measure: bool) -> None:
        api = live.api(way)
        for _attempt in range(200):
            t0 = time.perf_counter()
            async with api.http.post(f"{P}/sessions/{live.session_id}/runs", data=body,
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
        _, last, _ = await count_sse(api.http, run_id)
        if b'"status":"completed"' not in last:
            raise RuntimeError(f"run {run_id} did not complete: {last[-200:]!r}")

    for way in ("front", "direct", "front", "direct"):  # warm-up
        await one(way, False)
    for i in range(cfg.create_samples):
        order = ("front", "direct") if i % 2 == 0 else ("direct", "front")
        for way in order:
            await one(way, True)
    f, d = samples["front"], samples["direct"]
    log(f"run_create_202: front p50 {pct(f, 50):.2f} p99 {pct(f, 99):.2f} ms; "
        f"direct p50 {pct(d, 50):.2f} p99 {pct(d, 99):.2f} ms; 409 retries {conflicts}")
    notes = {"samples": len(f), "front_max_ms": max(f), "direct_max_ms": max(d),
             "conflict_retries_409": conflicts}
    return [
        Figure("run_create_202.p50", pct(f, 50), "ms", pct(d, 50), "same POST on the daemon socket",
               None, notes),
        Figure("run_create_202.p99", pct(f, 99), "ms", pct(d, 99), "same POST on the daemon socket",
               Target("value", "<=", 5.0)),
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


async def bench_request_relay(cfg: Config, live: Live) -> list[Figure]:
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
            await hammer(live.api(way).http, method, path, data, 4 * cfg.relay_concurrency,
                         cfg.relay_concurrency)
        for rep in range(cfg.relay_reps):
            order = ("front", "direct") if rep % 2 == 0 else ("direct", "front")
            for way in order:
                c0 = (cpu_seconds([daemon_pid]), cpu_seconds([front_pid]), time.process_time())
                rate, errors = await hammer(live.api(way).http, method, path, data,
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
            Target("ratio", ">=", 0.6) if label != "get_health" else None,
            {"requests": cfg.relay_requests, "concurrency": cfg.relay_concurrency,
             "reps": cfg.relay_reps, "front_rates": [round(x) for x in rates["front"]],
             "direct_rates": [round(x) for x in rates["direct"]],
             "cpu_us_per_request": cpu_us}))
    # What all those POSTs did to GET /sessions (it lists every session, no paging).
    t0 = time.perf_counter()
    async with live.api("direct").http.get(f"{P}/sessions") as resp:
        raw = await resp.read()
    elapsed_ms = (time.perf_counter() - t0) * 1000
    figures[0].notes["one_get_sessions_after_post_phase"] = {
        "sessions": len(orjson.loads(raw)["sessions"]), "ms": round(elapsed_ms, 2),
        "bytes": len(raw)}
    return figures


# -- driver -------------------------------------------------------------------------------------

BENCHES = ("store_append", "sse_front_vs_direct", "delta_latency", "run_create_202",
           "request_relay")

SECTION_TIMEOUT_S = 300  # each section of bench_host / bench_load, at most
Section = tuple[str, Callable[[bool, "Owned"], Awaitable[list[Figure]]], tuple[str, ...]]


def extra_sections() -> list[Section]:
    """Sections kept in their own modules: (name, runner(quick, owned), the --only names)."""
    import bench_host
    import bench_load
    return [*bench_host.SECTIONS, *bench_load.SECTIONS]


def extra_configs(quick: bool) -> dict[str, Any]:
    import bench_host
    import bench_load
    return {"host": vars(bench_host.HostBenchConfig.make(quick)),
            "load": vars(bench_load.LoadBenchConfig.make(quick))}


def all_names() -> tuple[str, ...]:
    return BENCHES + tuple(n for _, _, picks in extra_sections() for n in picks)


async def run_all(cfg: Config, only: set[str], owned: Owned,
                  errors: list[dict[str, str]]) -> list[Figure]:
    figures: list[Figure] = []

    async def guarded(name: str, fn: Callable[[], Awaitable[list[Figure]]],
                      picks: tuple[str, ...] | None = None) -> None:
        if not only & set(picks or (name,)):
            return
        log(f"{name} ...")
        t0 = time.perf_counter()
        try:
            figures.extend(await fn())
        except Exception as exc:
            traceback.print_exc()
            errors.append({"benchmark": name, "error": f"{type(exc).__name__}: {exc}"})
        log(f"{name} done in {time.perf_counter() - t0:.1f} s")

    await guarded("store_append", lambda: bench_store_append(cfg, owned))
    await guarded("sse_front_vs_direct", lambda: bench_sse(cfg, owned))
    if only & {"delta_latency", "run_create_202", "request_relay"}:
        live = Live(cfg, owned)
        try:
            try:
                await live.start()
            except Exception as exc:
                traceback.print_exc()
                errors.append({"benchmark": "live stack", "error": f"{type(exc).__name__}: {exc}"})
            else:
                await guarded("delta_latency", lambda: bench_delta_latency(cfg, live))
                await guarded("run_create_202", lambda: bench_run_create(cfg, live))
                await guarded("request_relay", lambda: bench_request_relay(cfg, live))
        finally:
            await live.close()
    for name, runner, picks in extra_sections():
        await guarded(name, lambda runner=runner: asyncio.wait_for(  # type: ignore[misc]
            runner(cfg.quick, owned), SECTION_TIMEOUT_S), picks)
    return figures


def nproc() -> int:
    """What `nproc` prints: the CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 0


def server_timeline(db_path: Path, run_id: str) -> dict[str, Any]:
    """The daemon's own clock (ms resolution): run row created_at, then each event's commit ts."""
    def ms(ts: str) -> float:
        return dt.datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp() * 1000
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        created = conn.execute("SELECT created_at FROM runs WHERE id = ?", (run_id,)).fetchone()[0]
        rows = conn.execute("SELECT seq, kind, payload, ts FROM events WHERE run_id = ? "
                            "ORDER BY seq", (run_id,)).fetchall()
    finally:
        conn.close()
    out = []
    seen_delta = False
    for seq, kind, payload, ts in rows:
        if kind == "output.delta":
            if seen_delta:
                continue
            seen_delta = True
        doc = orjson.loads(payload)
        what = kind + ":" + ",".join(str(doc[k]) for k in ("phase", "state", "status")
                                     if k in doc)
        out.append({"seq": seq, "event": what, "ms_after_created": round(ms(ts) - ms(created))})
    return {"created_at": created, "events": out}


def fmt_num(x: float | None, unit: str) -> str:
    if x is None:
        return "-"
    if unit in ("events/s", "req/s"):
        return f"{x:,.0f}"
    return f"{x:.3f}" if abs(x) < 10 else f"{x:.1f}"


def render(figures: list[Figure], header: str) -> str:
    rows = [("figure", "value", "unit", "baseline", "ratio", "target", "met")]
    for f in figures:
        rows.append((f.name, fmt_num(f.value, f.unit), f.unit, fmt_num(f.baseline, f.unit),
                     "-" if f.ratio is None else f"{f.ratio:.2f}",
                     f.target.text(f.unit) if f.target else "-",
                     {True: "yes", False: "NO", None: "-"}[f.met]))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    right = {1, 3, 4}
    lines = [header]
    for n, r in enumerate(rows):
        cells = [c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in
                 enumerate(zip(r, widths))]
        lines.append("  ".join(cells).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="~1 min version (fewer samples)")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON to FILE")
    names = all_names()
    parser.add_argument("--only", metavar="NAME", action="append", choices=names,
                        help="run only this benchmark (repeatable): " + ", ".join(names))
    parser.add_argument("--strict", action="store_true",
                        help="exit 2 when a target is missed (default: only errors fail)")
    args = parser.parse_args(argv)
    cfg = Config.make(args.quick)
    only = set(args.only or names)

    def on_term(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt(f"signal {signum}")
    signal.signal(signal.SIGTERM, on_term)

    started = dt.datetime.now().astimezone()
    header = (f"llamon Playground bench ({'quick' if cfg.quick else 'full'})  "
              f"date {started.isoformat(timespec='seconds')}  nproc {nproc()}  "
              f"python {platform.python_version()}  sqlite {sqlite3.sqlite_version}  "
              f"aiohttp {aiohttp.__version__}")
    print(header, file=sys.stderr, flush=True)
    owned = Owned()
    errors: list[dict[str, str]] = []
    load_before = os.getloadavg()
    busy0, own0, reaped0 = busy_seconds(), time.process_time(), reaped_children_cpu()
    t0 = time.perf_counter()
    figures: list[Figure] = []
    try:
        figures = asyncio.run(run_all(cfg, only, owned, errors))
    finally:
        leftovers = owned.close_all()
    duration = time.perf_counter() - t0
    # Other people's work on the same cores makes every figure noisier: say how much there was.
    # Our children: what the live trees had used when closed, or (better, once everything is
    # reaped) the CPU of every descendant that was waited for, Hosts of past generations and
    # processes started outside a Stack included.
    ours = max(owned.child_cpu, reaped_children_cpu() - reaped0)
    foreign = max(0.0, (busy_seconds() - busy0) - (time.process_time() - own0) - ours)
    foreign_cores = foreign / duration
    load_after = os.getloadavg()
    noise = (f"other processes used {foreign_cores:.2f} of {nproc()} cores on average; "
             f"loadavg {load_before[0]:.2f} -> {load_after[0]:.2f}")
    if leftovers:
        errors.append({"benchmark": "teardown", "error": f"processes still alive: {leftovers}"})
    print(render(figures, header + f"  took {duration:.0f} s"))
    print(f"noise: {noise}" + ("  (busy machine: treat figures with care)"
                               if foreign_cores > 0.25 else ""))
    for e in errors:
        print(f"ERROR {e['benchmark']}: {e['error']}")
    if args.json:
        doc = {"schema": "llamon-playground-bench/1", "date": started.isoformat(),
               "mode": "quick" if cfg.quick else "full", "nproc": nproc(),
               "python": platform.python_version(), "sqlite": sqlite3.sqlite_version,
               "aiohttp": aiohttp.__version__, "platform": platform.platform(),
               "duration_s": round(duration, 1),
               "noise": {"foreign_cpu_cores": round(foreign_cores, 3),
                         "loadavg_before": load_before[0], "loadavg_after": load_after[0]},
               "config": {**{k: v for k, v in vars(cfg).items()},
                          "sections": extra_configs(cfg.quick)},
               "figures": [f.as_json() for f in figures], "errors": errors}
        Path(args.json).write_text(json.dumps(doc, indent=2) + "\n")
    if errors:
        return 1
    if args.strict and any(f.met is False for f in figures):
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
