"""history_year, the writes: bundles and deletion on a year's history
(scripts/benchmarks/inputs/year_history.py), each figure against its same-run baseline. Called by
the history_year section with the history it built; works on a copy of its own (it ends by
deleting everything).

  history_year.export_session  median ms of POST /bundles/export of one hundred-run session
                               (daemon socket)  vs  the same session imported into an empty
                               history and exported from there
  history_year.import_health   p99 of GET /health through the front, 20 probes a second,
                               while a bundle of 100 of the history's sessions is imported
                               into it  vs  the same import into an empty history, probed
                               the same way (the probes' idle p99 in the notes)
  history_year.delete_all      seconds of DELETE /sessions through the front (every session,
                               run, event and suite, and the freed pages given back)  vs  the
                               same rows deleted in one transaction with sqlite3 in process
                               on a copy of the same file
  history_year.delete_health   p99 of the same /health probes while that delete runs  vs  the
                               probes with nothing else going on

Probes are sent on a fixed schedule, each its own task, so a stall shows in every probe it
holds up (not only in the one that waited). The notes carry the WAL's largest size during
the delete (sampled every 20 ms) and the file's size before and after.
"""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
import statistics
import time
from collections.abc import Awaitable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

import aiohttp

from llamon_playground.daemon.store.migrations import migrate
from scripts.benchmarks.clients.client import call, direct_session, start_checked_front
from scripts.benchmarks.figures import Figure, Target, log, pct
from scripts.benchmarks.inputs.year_history import Built, install
from scripts.benchmarks.owned import Owned
from scripts.benchmarks.sections.history.load_history import wait_compacted

PROBE_EVERY = 0.05  # 20 probes a second
WRITE_EVERY = 0.25  # a session created four times a second
IDLE_S = 5.0
EXPORTS = 9
BUNDLE_SESSIONS = 100
ONE_TRANSACTION = (  # what DELETE /sessions did before it went a step at a time
    "DELETE FROM event_blocks", "DELETE FROM suite_results", "DELETE FROM suite_runs",
    "DELETE FROM suite_files", "DELETE FROM suite_cases", "DELETE FROM suites",
    "DELETE FROM events", "DELETE FROM run_files", "UPDATE runs SET parent_run_id = NULL",
    "DELETE FROM runs", "DELETE FROM sessions")


@dataclass
class Probes:
    """What the probes saw while the work ran."""

    health: list[float]  # ms of each /health, in the order sent
    slow: list[tuple[float, float]]  # (s into the work, ms) of each /health over 50 ms
    writes: list[float]  # ms of each POST /sessions


async def probed(front: aiohttp.ClientSession, work: Awaitable[Any], writes: bool = False
                 ) -> tuple[Probes, float, Any]:
    """Run `work` while /health is probed on schedule (and, with `writes`, a session is
    created every WRITE_EVERY s): (what the probes saw, the work's s, its answer)."""
    health: list[asyncio.Task[tuple[float, float]]] = []
    made: list[asyncio.Task[tuple[float, float]]] = []
    done = asyncio.Event()
    t = time.perf_counter()

    async def schedule(tasks: list[Any], every: float, fn: Any) -> None:
        n = 0
        while not done.is_set():
            tasks.append(asyncio.create_task(fn(front, t)))
            n += 1
            await asyncio.sleep(max(0.0, t + n * every - time.perf_counter()))
    schedulers = [asyncio.create_task(schedule(health, PROBE_EVERY, probe))]
    if writes:
        schedulers.append(asyncio.create_task(schedule(made, WRITE_EVERY, write_probe)))
    try:
        answer = await work
    finally:
        took = time.perf_counter() - t
        done.set()
        await asyncio.gather(*schedulers)
    seen = await asyncio.gather(*health)
    return Probes([ms for _, ms in seen], [(round(at, 2), round(ms)) for at, ms in seen
                                           if ms > 50],
                  [ms for _, ms in await asyncio.gather(*made)]), took, answer


async def probe(front: aiohttp.ClientSession, t0: float) -> tuple[float, float]:
    t = time.perf_counter()
    async with front.get("/health") as resp:
        await resp.read()
        if resp.status != 200:
            raise RuntimeError(f"/health answered {resp.status}")
    return t - t0, (time.perf_counter() - t) * 1000


async def write_probe(front: aiohttp.ClientSession, t0: float) -> tuple[float, float]:
    t = time.perf_counter()
    await call(front, "POST", "sessions", {"title": "made while it ran"}, want=201)
    return t - t0, (time.perf_counter() - t) * 1000


async def idle_probes(front: aiohttp.ClientSession) -> list[float]:
    seen, _, _ = await probed(front, asyncio.sleep(IDLE_S))
    return seen.health


async def export_ms(http: aiohttp.ClientSession, session_id: str) -> float:
    t = time.perf_counter()
    await call(http, "POST", "bundles/export", {"session_ids": [session_id]})
    return (time.perf_counter() - t) * 1000


class WalWatch:
    """The largest size the WAL reached while it ran (sampled)."""

    def __init__(self, db: Path) -> None:
        self.wal = Path(f"{db}-wal")
        self.largest = 0
        self._task: asyncio.Task[None] | None = None

    async def _loop(self) -> None:
        while True:
            try:
                self.largest = max(self.largest, self.wal.stat().st_size)
            except FileNotFoundError:
                pass
            await asyncio.sleep(0.02)

    def __enter__(self) -> Self:
        self._task = asyncio.create_task(self._loop())
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()


def one_transaction(src: Path, work: Path) -> dict[str, float]:
    """The baseline: the same history deleted in one transaction with sqlite3 in process
    (migrated first, so with the same indexes the daemon has)."""
    db = work / "baseline.sqlite3"
    shutil.copyfile(src, db)
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute("PRAGMA foreign_keys=ON")
        migrate(conn)
        t = time.perf_counter()
        conn.execute("BEGIN IMMEDIATE")
        for sql in ONE_TRANSACTION:
            conn.execute(sql)
        conn.execute("COMMIT")
        took = time.perf_counter() - t
        wal = Path(f"{db}-wal").stat().st_size
    finally:
        conn.close()
        for path in work.glob("baseline.sqlite3*"):
            path.unlink()
    return {"s": took, "wal_mb": wal / 1e6}


async def bench_ops(built: Built, owned: Owned, quick: bool) -> list[Figure]:
    """The four figures on a copy of `built` (`quick` sized it already: nothing here
    depends on it)."""
    project = owned.project("lpyo")
    db = await asyncio.to_thread(install, built.path, project)
    year = owned.start(project)
    empty = owned.start(owned.project("lpyq"))
    figures: list[Figure] = []
    try:
        _, url, headers = await start_checked_front(year)
        _, url_empty, headers_empty = await start_checked_front(empty)
        async with direct_session(year) as http, direct_session(empty) as http_empty, \
                aiohttp.ClientSession(base_url=url, headers=headers) as front, \
                aiohttp.ClientSession(base_url=url_empty, headers=headers_empty) as front_empty:
            await call(http, "GET", "sessions")  # opens (and migrates) the history
            idle = await idle_probes(front)
            figures.append(await export_figure(http, http_empty, empty, built))
            figures.append(await import_figure(http, front_empty, front, db, idle))
            await wait_compacted(db, None, timeout=600)
            figures += await delete_figures(front, db, idle, built, project)
    finally:
        owned.close_stack(year)
        owned.close_stack(empty)
    return figures


async def export_figure(http: aiohttp.ClientSession, http_empty: aiohttp.ClientSession,
                        empty: Any, built: Built) -> Figure:
    session = built.info["big_sessions"][len(built.info["big_sessions"]) // 2]
    doc = await call(http, "POST", "bundles/export", {"session_ids": [session]})
    answer = await call(http_empty, "POST", "bundles/import", {"bundle": doc}, want=201)
    copy = answer["sessions"][session]
    await wait_compacted(empty.settings.db_path, None, timeout=120)
    here: list[float] = []
    there: list[float] = []
    await export_ms(http_empty, copy)  # the first export of each warms its daemon
    for n in range(EXPORTS):  # interleaved: a busy moment of the machine costs both alike
        for side in ((http, session, here), (http_empty, copy, there))[::1 if n % 2 else -1]:
            side[2].append(await export_ms(side[0], side[1]))
    log(f"history_year: export of a session of {len(doc['runs'])} runs, "
        f"{len(doc['events'])} events: median {statistics.median(here):.0f} ms here, "
        f"{statistics.median(there):.0f} ms from an empty history")
    return Figure("history_year.export_session", statistics.median(here), "ms",
                  statistics.median(there), "the same session exported from an empty history",
                  Target("ratio", "<=", 1.25),
                  {"runs": len(doc["runs"]), "events": len(doc["events"]),
                   "samples_ms": [round(x, 1) for x in here],
                   "empty_samples_ms": [round(x, 1) for x in there]})


async def import_figure(http: aiohttp.ClientSession, front_empty: aiohttp.ClientSession,
                        front: aiohttp.ClientSession, db: Path, idle: list[float]) -> Figure:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        middle = int(conn.execute("SELECT count(*) FROM sessions").fetchone()[0]) // 2
        ids = [r[0] for r in conn.execute("SELECT id FROM sessions ORDER BY rowid LIMIT ? "
                                          "OFFSET ?", (BUNDLE_SESSIONS, middle))]
    finally:
        conn.close()
    doc = await call(http, "POST", "bundles/export", {"session_ids": ids}, timeout=300)
    body = {"bundle": doc}
    there, empty_s, _ = await probed(front_empty, call(
        front_empty, "POST", "bundles/import", body, want=201, timeout=300))
    seen, took, _ = await probed(front, call(front, "POST", "bundles/import", body, want=201,
                                             timeout=300), writes=True)
    busy = seen.health
    log(f"history_year: import of {len(ids)} sessions ({len(doc['runs'])} runs, "
        f"{len(doc['events'])} events) in {took:.1f} s (into an empty history "
        f"{empty_s:.1f} s); /health p99 {pct(busy, 99):.1f} ms, max {max(busy):.0f} ms over "
        f"{len(busy)} (into an empty history {pct(there.health, 99):.1f} ms; idle "
        f"{pct(idle, 99):.1f} ms)")
    return Figure("history_year.import_health", pct(busy, 99), "ms", pct(there.health, 99),
                  "the same import into an empty history, probed the same way",
                  Target("value", "<=", 100.0),
                  {"sessions": len(ids), "runs": len(doc["runs"]), "events": len(doc["events"]),
                   "idle_p99_ms": round(pct(idle, 99), 1),
                   "import_s": round(took, 2), "empty_import_s": round(empty_s, 2),
                   "probes": len(busy), "max_ms": round(max(busy), 1),
                   "median_ms": round(statistics.median(busy), 2), "slow_probes": seen.slow,
                   **write_notes(seen)})


async def delete_figures(front: aiohttp.ClientSession, db: Path, idle: list[float],
                         built: Built, project: Path) -> list[Figure]:
    before = db.stat().st_size  # noqa: ASYNC240 (before the measured call)
    with WalWatch(db) as wal:
        seen, took, answer = await probed(front, call(
            front, "DELETE", "sessions", {}, timeout=900), writes=True)
    busy = seen.health
    after = db.stat().st_size  # noqa: ASYNC240 (after it)
    base = await asyncio.to_thread(one_transaction, built.db, project.parent)
    deleted = answer["deleted"]
    log(f"history_year: delete all ({deleted}) in {took:.1f} s, file {before / 1e6:.0f} -> "
        f"{after / 1e6:.1f} MB, WAL at most {wal.largest / 1e6:.1f} MB; /health p99 "
        f"{pct(busy, 99):.1f} ms, max {max(busy):.0f} ms over {len(busy)}; one transaction in "
        f"process {base['s']:.1f} s, WAL {base['wal_mb']:.0f} MB")
    notes = {"deleted": deleted, "file_mb_before": round(before / 1e6, 1),
             "file_mb_after": round(after / 1e6, 1), "wal_mb_max": round(wal.largest / 1e6, 1),
             "one_transaction_wal_mb": round(base["wal_mb"], 1)}
    return [Figure("history_year.delete_all", took, "s", base["s"],
                   "the same rows deleted in one transaction with sqlite3 in process",
                   Target("value", "<=", 60.0), notes),
            Figure("history_year.delete_health", pct(busy, 99), "ms", pct(idle, 99),
                   "the same /health probes with nothing else going on",
                   Target("value", "<=", 100.0),
                   {"probes": len(busy), "max_ms": round(max(busy), 1),
                    "median_ms": round(statistics.median(busy), 2), "slow_probes": seen.slow,
                    **write_notes(seen)})]


def write_notes(seen: Probes) -> dict[str, Any]:
    """A session created meanwhile: how long the writer kept it waiting."""
    return {"writes": len(seen.writes), "write_p50_ms": round(statistics.median(seen.writes), 1),
            "write_max_ms": round(max(seen.writes), 1)}
