"""A year's history, built once through the daemon's own import path and cached.

`year_history(quick)` answers a history folder (what a project keeps under
`.llamon/playground/`: the database and `files/`) holding what a developer who uses the
Playground daily for a year has: 100,000 runs in 10,000 sessions and 10,000,000 events
(`--quick`: ten times fewer of each). Most events are streamed `output.delta`s of
finished runs; 200 runs (20 quick) are long answers of 10,000 deltas; runs carry labels,
notes, scores and every ending status, and a few suites name some of them.

The history is made the way a user's is: bundles POSTed to a real daemon's
`/bundles/import`, then the daemon left running until its compactor has moved every
finished run's events into blocks, then stopped cleanly (SIGTERM: the WAL is folded in).
No SQL is written by hand. The result is cached under `$XDG_CACHE_HOME/llamon-playground-
bench/` (else `~/.cache/...`), keyed by a hash of the parameters, this file's code and the
schema version, so every section and every bench run (and every worktree) with the same
builder shares one build; a lock makes a second builder wait for the first.

    .venv/bin/python -m scripts.benchmarks.inputs.year_history [--quick] [--rebuild]

builds (or finds) it and prints its path and counts. `install(src, project)` copies a
built history into a project, ready for a daemon to open.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import fcntl
import hashlib
import inspect
import io
import os
import random
import shutil
import sqlite3
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import orjson

from llamon_playground.daemon.store.migrations import SCHEMA_VERSION
from scripts.benchmarks.clients.client import P, direct_session
from scripts.benchmarks.figures import log
from scripts.benchmarks.owned import Owned


@dataclass(frozen=True)
class YearParams:
    """What the history holds; every count is exact."""

    sessions: int
    runs: int
    events: int
    long_runs: int  # runs of exactly LONG_DELTAS deltas (the replay's subjects)
    seed: int = 25

    @staticmethod
    def make(quick: bool) -> YearParams:
        if quick:
            return YearParams(sessions=1_000, runs=10_000, events=1_000_000, long_runs=20)
        return YearParams(sessions=10_000, runs=100_000, events=10_000_000, long_runs=200)


LONG_DELTAS = 10_000
FRAMING = 6  # events of a run besides its deltas: 3 statuses, 2 phases, run.output
BUNDLE_EVENTS = 250_000  # events per imported bundle (a bundle holds at most 1,000,000 records)
SUITES = 3
SUITE_CASES = 20
STATUSES = ["completed"] * 16 + ["failed"] * 3 + ["cancelled"]
REASONS = {"failed": "host_error", "cancelled": "cancelled_by_user", "completed": None}
SYLLABLES = ["ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ze", "pu"]
START = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
VOCABULARY = 20_000
DB_NAME = "playground.sqlite3"
COMPACTION_TIMEOUT_S = 1800.0


# -- what the history holds (pure, deterministic) ----------------------------------------------

def word(n: int) -> str:
    """A made-up word; low numbers are common."""
    out, n = [], n + 1
    while n:
        out.append(SYLLABLES[n % 10])
        n //= 10
    return "".join(out)


def sentence(rng: random.Random, words: int) -> str:
    return " ".join(word(min(int(rng.paretovariate(0.8)) - 1, VOCABULARY - 1))
                    for _ in range(words))


def session_sizes(p: YearParams) -> list[int]:
    """Runs per session, summing to p.runs: most sessions ten, every hundredth a long one
    of a hundred, and a tenth of them a single run (as a year of use looks)."""
    sizes = [p.runs // p.sessions] * p.sessions
    big, single = p.sessions // 100, p.sessions // 10
    for s in range(big):
        sizes[s * 100 + 50] = 10 * sizes[s * 100 + 50]
    moved = sum(sizes) - p.runs
    s = 0
    while moved > 0 and s < p.sessions:
        if s % 100 != 50 and single > 0:
            take = min(sizes[s] - 1, moved)
            sizes[s] -= take
            moved -= take
            single -= 1
        s += 1
    sizes[-1] -= moved  # never needed with the shipped counts; keeps the sum exact
    assert sum(sizes) == p.runs and min(sizes) >= 1
    return sizes


def delta_counts(p: YearParams) -> list[int]:
    """Deltas per run: the long runs spread evenly, the rest varied, all adding up to
    p.events (with FRAMING events per run)."""
    every = p.runs // p.long_runs
    long_at = {every // 2 + i * every for i in range(p.long_runs)}
    short_total = p.events - p.runs * FRAMING - p.long_runs * LONG_DELTAS
    short_runs = p.runs - p.long_runs
    mean = short_total // short_runs
    counts = [LONG_DELTAS if n in long_at else max(1, mean - 50 + (n * 7919) % 101)
              for n in range(p.runs)]
    short = [n for n in range(p.runs) if n not in long_at]
    gap = p.events - p.runs * FRAMING - sum(counts)
    for i, n in enumerate(short):  # spread the rounding over the first short runs
        if gap == 0:
            break
        step = 1 if gap > 0 else -1
        if counts[n] + step >= 1:
            counts[n] += step
            gap -= step
        if i == len(short) - 1 and gap:
            raise ValueError("cannot fit the event count")
    return counts


def stamp(seconds: float) -> str:
    return (START + dt.timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Plan:
    """Every run's session, size and time; cut into bundles of about BUNDLE_EVENTS events."""

    def __init__(self, p: YearParams) -> None:
        self.p = p
        self.deltas = delta_counts(p)
        self.session_of: list[int] = []
        for s, size in enumerate(session_sizes(p)):
            self.session_of.extend([s] * size)
        self.year_s = 364 * 86400.0

    def run_time(self, n: int) -> float:
        return self.year_s * n / self.p.runs

    def bundles(self) -> Iterator[tuple[int, int]]:
        """(first run, end run) of each bundle; a session is never split."""
        first, events = 0, 0
        for n in range(self.p.runs):
            boundary = n > first and self.session_of[n] != self.session_of[n - 1]
            if boundary and events >= BUNDLE_EVENTS:
                yield first, n
                first, events = n, 0
            events += self.deltas[n] + FRAMING
        yield first, self.p.runs


def _events_of(rng: random.Random, run_id: str, status: str, deltas: int, t: float,
               seq: int) -> tuple[list[dict[str, Any]], str]:
    """A finished run's events as a bundle carries them, and its output's text."""
    pieces = [word(min(int(rng.paretovariate(0.8)) - 1, VOCABULARY - 1)) + " "
              for _ in range(min(deltas, 400))]
    texts = [pieces[i % len(pieces)] for i in range(deltas)]
    text = "".join(texts)
    ts = stamp(t)
    events: list[dict[str, Any]] = []

    def add(kind: str, payload: dict[str, Any]) -> None:
        events.append({"seq": seq + len(events), "run_id": run_id, "kind": kind,
                       "payload": payload, "ts": ts})

    add("run.status", {"status": "queued", "previous": None, "reason": None})
    add("run.status", {"status": "running", "previous": "queued", "reason": None})
    add("run.phase", {"phase": "send", "state": "started"})
    for piece in texts:
        add("output.delta", {"text": piece, "artifact_id": "answer", "append": True})
    add("run.phase", {"phase": "send", "state": "ended"})
    add("run.output", {"parts": [{"kind": "text", "text": text}]})
    add("run.status", {"status": status, "previous": "running", "reason": REASONS[status]})
    return events, text


def bundle(plan: Plan, first: int, end: int, with_suites: bool) -> bytes:
    """One bundle of runs first..end-1 with their sessions and events."""
    rng = random.Random(plan.p.seed * 1_000_003 + first)
    sessions: list[dict[str, Any]] = []
    runs: list[dict[str, Any]] = []
    events: list[dict[str, Any]] = []
    for n in range(first, end):
        s = plan.session_of[n]
        sid = f"s{s}"
        t = plan.run_time(n)
        if not sessions or sessions[-1]["id"] != sid:
            sessions.append({"id": sid, "title": f"session {sentence(rng, 3)}",
                             "created_at": stamp(t)})
        status = rng.choice(STATUSES)
        run_events, text = _events_of(rng, f"r{n}", status, plan.deltas[n], t, len(events))
        events.extend(run_events)
        run: dict[str, Any] = {
            "id": f"r{n}", "session_id": sid, "status": status, "reason": REASONS[status],
            "created_at": stamp(t), "started_at": stamp(t + 0.1),
            "ended_at": stamp(t + 0.2 + plan.deltas[n] / 200), "context_id": f"c{s}",
            "duration_ms": 200 + plan.deltas[n] * 5,
            "input": {"parts": [{"kind": "text", "text": sentence(rng, rng.randint(5, 20))}]},
            "output": [{"kind": "text", "text": text}],
            "scores": [{"evaluator": "judge",
                        "passStatus": rng.choice(["pass"] * 9 + ["fail"])}]}
        if n % 10 == 0:
            run["label"] = f"label {sentence(rng, 2)}"
        if n % 20 == 0:
            run["note"] = sentence(rng, 8)
        runs.append(run)
    doc: dict[str, Any] = {"format": "llamon.playground.bundle/1", "sessions": sessions,
                           "runs": runs, "events": events, "blobs": {}}
    if with_suites:
        doc["suites"] = _suites(runs)
    return orjson.dumps(doc)


def _suites(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A few suites whose cases are some of the bundle's runs, each its own baseline."""
    out = []
    for k in range(SUITES):
        cases = []
        for c in range(SUITE_CASES):
            run = runs[(k * SUITE_CASES + c) * 7 % len(runs)]
            cases.append({"id": f"case{k}-{c}", "position": c, "kind": "run",
                          "source_run_id": run["id"], "source_session_id": run["session_id"],
                          "turns": [{"input": {"parts": run["input"]["parts"]},
                                     "resume": False}],
                          "baseline": {"run_id": run["id"]}})
        out.append({"id": f"suite{k}", "name": f"year suite {k}", "cases": cases,
                    "created_at": stamp(0)})
    return out


CACHE_MARK = "# -- the cache --"  # the code above it makes the history (cache_key)


# -- the cache ---------------------------------------------------------------------------------

def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "llamon-playground-bench"


def cache_key(p: YearParams) -> str:
    """A hash of what decides the history's content: the parameters, the code that makes
    the bundles and imports them, and the schema version (not the cache's own code)."""
    h = hashlib.sha256()
    h.update(orjson.dumps(asdict(p)))
    h.update(Path(__file__).read_text().split(CACHE_MARK)[0].encode())
    for fn in (_import_all, _wait_compacted):
        h.update(inspect.getsource(fn).encode())
    h.update(f"schema {SCHEMA_VERSION}".encode())
    return h.hexdigest()[:16]


@dataclass(frozen=True)
class Built:
    """Where a year's history is, and what it holds."""

    path: Path  # the history folder: DB_NAME and files/
    params: YearParams
    info: dict[str, Any]  # counts, sizes, how long the build took

    @property
    def db(self) -> Path:
        return self.path / DB_NAME


def year_history(quick: bool, owned: Owned | None = None, rebuild: bool = False) -> Path:
    """The cached history folder for the full (or quick) year: built now if missing.
    (From async code: `await built_history(...)`.)"""
    return asyncio.run(built_history(quick, owned, rebuild)).path


async def built_history(quick: bool, owned: Owned | None = None, rebuild: bool = False
                        ) -> Built:
    """The cached history (built now if missing), with what it holds. Safe to call from
    several processes at once: one builds, the others wait for it."""
    p = YearParams.make(quick)
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    final = root / f"year-{'quick' if quick else 'full'}-{cache_key(p)}"
    with open(root / f"{final.name}.lock", "w") as lock:  # noqa: ASYNC230 (opens, never blocks)
        await asyncio.to_thread(fcntl.flock, lock, fcntl.LOCK_EX)
        try:
            if rebuild and final.exists():
                shutil.rmtree(final)
            if not (final / "built.json").exists():
                await _build(p, final, owned)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return Built(final / "history", p, orjson.loads((final / "built.json").read_bytes()))


async def _build(p: YearParams, final: Path, owned: Owned | None) -> None:
    mine = owned is None
    owner = owned or Owned()
    try:
        project = owner.project("lpyr")
        stack = owner.start(project)
        try:
            info = await _import_all(p, stack)
        finally:
            owner.close_stack(stack)  # SIGTERM: the daemon checkpoints and closes the file
        history = project / ".llamon" / "playground"
        info.update(_counts(history / DB_NAME))
        staging = final.with_name(final.name + ".part")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(mode=0o700)
        shutil.move(str(history), staging / "history")
        (staging / "built.json").write_bytes(orjson.dumps(info, option=orjson.OPT_INDENT_2))
        os.replace(staging, final)
        log(f"year history built in {info['build_s']:.0f} s: " + ", ".join(
            f"{k} {v}" for k, v in info.items() if isinstance(v, int | float)))
    finally:
        if mine:
            owner.close_all()


async def _import_all(p: YearParams, stack: Any) -> dict[str, Any]:
    plan = Plan(p)
    cuts = list(plan.bundles())
    t0 = time.perf_counter()
    import_s = 0.0
    ids: dict[str, dict[str, str]] = {"runs": {}, "sessions": {}, "suites": {}}
    async with direct_session(stack) as http:
        # The next bundle is made while the daemon imports this one.
        pending = asyncio.create_task(asyncio.to_thread(bundle, plan, *cuts[0], True))
        for i in range(len(cuts)):
            body = await pending
            if i + 1 < len(cuts):
                pending = asyncio.create_task(asyncio.to_thread(bundle, plan, *cuts[i + 1],
                                                                False))
            t = time.perf_counter()
            async with http.post(f"{P}/bundles/import", data=io.BytesIO(body),
                                 headers={"Content-Type": "application/json"}) as resp:
                raw = await resp.read()
                if resp.status != 201:
                    raise RuntimeError(f"import answered {resp.status}: {raw[:300]!r}")
            answer = orjson.loads(raw)
            ids["runs"].update(answer["runs"])
            ids["sessions"].update(answer["sessions"])
            ids["suites"].update(answer.get("suites") or {})
            import_s += time.perf_counter() - t
            log(f"year history: bundle {i + 1}/{len(cuts)} ({len(body) / 1e6:.0f} MB) "
                f"imported in {time.perf_counter() - t:.1f} s")
        imported = time.perf_counter() - t0
        await _wait_compacted(stack.settings.db_path)
    return {"build_s": round(time.perf_counter() - t0, 1), "import_s": round(import_s, 1),
            "imported_s": round(imported, 1),
            "compact_wait_s": round(time.perf_counter() - t0 - imported, 1),
            "bundles": len(cuts), "params": asdict(p),
            # What the sections ask for by name: the ids the import gave.
            "long_runs": [ids["runs"][f"r{n}"] for n in range(p.runs)
                          if plan.deltas[n] == LONG_DELTAS],
            "big_sessions": [ids["sessions"][f"s{s}"]
                             for s, size in enumerate(session_sizes(p)) if size >= 100],
            "suite_ids": sorted(ids["suites"].values()),
            "first_session": ids["sessions"]["s0"],
            "last_session": ids["sessions"][f"s{p.sessions - 1}"]}


async def _wait_compacted(db: Path) -> None:
    """Until the compactor's mark has passed the last run (every finished run is blocks)
    and it has given the pages the rows left back to the filesystem (a quarter of the file
    or less stays free)."""
    deadline = time.monotonic() + COMPACTION_TIMEOUT_S
    while time.monotonic() < deadline:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            last = conn.execute("SELECT max(rowid) FROM runs").fetchone()[0] or 0
            row = conn.execute("SELECT value FROM upkeep WHERE key = "
                               "'compacted_through_run_rowid'").fetchone()
            free = conn.execute("PRAGMA freelist_count").fetchone()[0]
            pages = conn.execute("PRAGMA page_count").fetchone()[0]
        finally:
            conn.close()
        if row is not None and int(row[0]) >= last and free * 4 <= pages:
            return
        await asyncio.sleep(1.0)
    raise RuntimeError(f"the daemon did not compact the history in {COMPACTION_TIMEOUT_S} s")


def _counts(db: Path) -> dict[str, Any]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        q = lambda sql: conn.execute(sql).fetchone()[0]  # noqa: E731
        return {"sessions": q("SELECT count(*) FROM sessions"),
                "runs": q("SELECT count(*) FROM runs"),
                "events": q("SELECT count(*) FROM events")
                + q("SELECT coalesce(sum(events), 0) FROM event_blocks"),
                "event_rows": q("SELECT count(*) FROM events"),
                "suites": q("SELECT count(*) FROM suites"),
                "db_mb": round(db.stat().st_size / 1e6, 1)}
    finally:
        conn.close()


# -- using it ----------------------------------------------------------------------------------

def install(history: Path, project: Path) -> Path:
    """Copy a built history into `project` (its `.llamon/playground/`, private modes);
    the database's path."""
    target = project / ".llamon" / "playground"
    if target.exists():
        shutil.rmtree(target)
    target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    shutil.copytree(history, target, copy_function=shutil.copy2)
    target.chmod(0o700)
    for path in target.rglob("*"):
        path.chmod(0o700 if path.is_dir() else 0o600)
    return target / DB_NAME


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="ten times smaller")
    parser.add_argument("--rebuild", action="store_true", help="build again even if cached")
    args = parser.parse_args()
    built = asyncio.run(built_history(args.quick, None, args.rebuild))
    print(built.path)
    print(orjson.dumps(built.info, option=orjson.OPT_INDENT_2).decode())


if __name__ == "__main__":
    sys.exit(main())
