"""history_year: the daemon on a year's history (scripts/benchmarks/inputs/year_history.py: 100,000
runs in 10,000 sessions, 10,000,000 events; `--quick` ten times fewer), each figure against
its same-run baseline.

  history_year.list_sessions  p99 of GET /sessions (the first page, newest first, and pages
                              deep in the list)  vs  the same SQL with sqlite3 in process
  history_year.list_runs      p99 of a session's runs (first pages, both orders, of the
                              hundred-run sessions and of ten-run ones)  vs  the same SQL
  history_year.run_detail     p99 of GET /runs/{id} (short runs and 10,000-delta ones)  vs
                              SELECT * of the row in process
  history_year.search         p99 of search_100k's query mix on this history  vs  the same
                              FTS5 queries in process
  history_year.suite_report   p99 of GET /suite-runs/{id} of a suite run made on it  vs  the
                              report's SQL in process
  history_year.replay         median ms to replay a finished 10,000-delta run (whole stream,
                              daemon socket)  vs  the same run imported into an empty history
  history_year.boot           the slowest of 4 boots to ready (spawn to `/health` 200), the
                              first one recovering a run a SIGKILL interrupted  vs  the same
                              on a history of one session, the two taking turns
  history_year.page_sessions  the page's session list shown (ms from navigation, through the
                              front; the median of the loads)  vs  the same on an empty history
  history_year.page_first_paint  its first-contentful-paint  vs  the same on an empty history

The history is copied from the cache for the daemon (`install`); the in-process baselines read
the same copy. Then the writes, on a copy of their own (`history_year_ops`): the export of
one session, /health during an import of 100 sessions and during delete all.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import sqlite3
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlencode

import aiohttp
import orjson

from llamon_playground.daemon.store.excerpts import SESSION_LIST_COLUMNS, run_list_columns
from llamon_playground.daemon.suites.records import REPORT_SQL
from scripts.benchmarks.clients.client import (
    P,
    call,
    count_sse,
    direct_session,
    start_checked_front,
)
from scripts.benchmarks.figures import Figure, Target, log, pct
from scripts.benchmarks.inputs.year_history import LONG_DELTAS, Built, built_history, install
from scripts.benchmarks.owned import Owned
from scripts.benchmarks.sections.history import history_year_ops
from scripts.benchmarks.sections.history.load_history import wait_compacted
from scripts.benchmarks.sections.history.search import in_process as search_in_process
from scripts.benchmarks.sections.history.search import queries as search_queries
from scripts.benchmarks.stack import Stack

PAGE = 100
ROUNDS = {"full": 40, "quick": 15}
REPLAYS = 15
BOOTS = 4
LOADS = {"full": 5, "quick": 3}
ENV = {"ECHO_CHUNK_DELAY_MS": "2"}
Timed = Callable[[], Awaitable[None]]


async def timed(samples: list[float], fn: Timed) -> None:
    t = time.perf_counter()
    await fn()
    samples.append((time.perf_counter() - t) * 1000)


def get(http: aiohttp.ClientSession, path: str) -> Timed:
    async def fn() -> None:
        async with http.get(f"{P}/{path}") as resp:
            body = await resp.read()
            if resp.status != 200:
                raise RuntimeError(f"GET {path} answered {resp.status}: {body[:200]!r}")
    return fn


def in_process(conn: sqlite3.Connection, samples: list[float], sql: str,
               args: tuple[Any, ...]) -> None:
    t = time.perf_counter()
    conn.execute(sql, args).fetchall()
    samples.append((time.perf_counter() - t) * 1000)


def figure(name: str, samples: list[float], base: list[float], base_what: str, bound: float,
           notes: dict[str, Any]) -> Figure:
    log(f"history_year: {name} p99 {pct(samples, 99):.1f} ms, median "
        f"{statistics.median(samples):.1f} ms over {len(samples)} (baseline p99 "
        f"{pct(base, 99):.1f} ms)")
    return Figure(f"history_year.{name}", pct(samples, 99), "ms", pct(base, 99), base_what,
                  Target("value", "<=", bound),
                  {"requests": len(samples), "median_ms": round(statistics.median(samples), 2),
                   "max_ms": round(max(samples), 1), **notes})


# -- the reads ---------------------------------------------------------------------------------

SESSIONS_SQL = (f"SELECT {SESSION_LIST_COLUMNS}, "
                "(SELECT COUNT(*) FROM runs r WHERE r.session_id = s.id) AS run_count "
                "FROM sessions s WHERE s.rowid > ? ORDER BY s.rowid LIMIT ?")
NEWEST_SQL = SESSIONS_SQL.replace("s.rowid > ?", "s.rowid < ?").replace("BY s.rowid",
                                                                         "BY s.rowid DESC")


async def reads(http: aiohttp.ClientSession, conn: sqlite3.Connection, built: Built,
                rounds: int) -> list[Figure]:
    rng = random.Random(7)
    info = built.info
    big = info["big_sessions"]
    small = [r[0] for r in conn.execute("SELECT s.id FROM sessions s WHERE (SELECT count(*) "
                                        "FROM runs r WHERE r.session_id = s.id) = 10 LIMIT 20")]
    sessions_n = int(conn.execute("SELECT max(rowid) FROM sessions").fetchone()[0])
    runs = [r[0] for r in conn.execute("SELECT id FROM runs WHERE rowid % 997 = 0")]
    columns = run_list_columns([r[1] for r in conn.execute("PRAGMA table_info(runs)")])
    out: list[Figure] = []

    # Sessions: the first page each way, and pages from deep in the list.
    web, base = [], []
    for _ in range(rounds):
        deep = rng.randint(1, sessions_n)
        for query, sql, args in (
                ("&order=newest", NEWEST_SQL, (2**63 - 1, PAGE + 1)),
                ("", SESSIONS_SQL, (0, PAGE + 1)),
                (f"&after={deep}", SESSIONS_SQL, (deep, PAGE + 1)),
                (f"&order=newest&after={deep}", NEWEST_SQL, (deep, PAGE + 1))):
            await timed(web, get(http, f"sessions?limit={PAGE}{query}"))
            in_process(conn, base, sql, args)
    out.append(figure("list_sessions", web, base, "the same SQL with sqlite3 in process",
                      20.0, {"sessions": sessions_n, "page": PAGE}))

    web, base = [], []
    for _ in range(rounds):
        for session in (rng.choice(big), rng.choice(small)):
            for order, sql, bound in (
                    ("oldest", (f"SELECT {columns} FROM runs WHERE session_id = ? AND rowid > ? "
                     "ORDER BY rowid LIMIT ?"), 0),
                    ("newest", (f"SELECT {columns} FROM runs WHERE session_id = ? AND rowid < ? "
                     "ORDER BY rowid DESC LIMIT ?"), 2**63 - 1)):
                await timed(web, get(http, f"sessions/{session}/runs?limit={PAGE}&order={order}"))
                in_process(conn, base, sql, (session, bound, PAGE + 1))
    out.append(figure("list_runs", web, base, "the same SQL with sqlite3 in process", 20.0,
                      {"runs_in_big_sessions": 100, "page": PAGE}))

    web, base = [], []
    long_runs = info["long_runs"]
    for _ in range(rounds):
        for run_id in (rng.choice(runs), rng.choice(long_runs)):
            await timed(web, get(http, f"runs/{run_id}"))
            in_process(conn, base, "SELECT * FROM runs WHERE id = ?", (run_id,))
    out.append(figure("run_detail", web, base, "SELECT * of the row with sqlite3 in process",
                      20.0, {"long_run_deltas": LONG_DELTAS}))

    web, base = [], []
    mix = search_queries(rng.choice(big))
    search_rounds = max(3, rounds // 5)
    for _ in range(search_rounds):
        for params in mix:
            await timed(web, get(http, f"search?{urlencode({**params, 'limit': 50})}"))
            base.append(search_in_process(conn, params))
    out.append(figure("search", web, base, "the same FTS5 queries with sqlite3 in process",
                      50.0, {"queries": len(mix)}))
    return out


async def suite_report(http: aiohttp.ClientSession, conn_of: Callable[[], sqlite3.Connection],
                       built: Built, rounds: int) -> Figure:
    """Run one of the history's suites against the echo Host, then read its report."""
    suite_id = built.info["suite_ids"][0]
    started = await call(http, "POST", f"suites/{suite_id}/runs", {}, want=(201, 202))
    suite_run = started.get("id") or started.get("suite_run_id")
    deadline = time.monotonic() + 300
    while True:
        report = await call(http, "GET", f"suite-runs/{suite_run}")
        if report["status"] not in ("queued", "running"):
            break
        if time.monotonic() > deadline:
            raise RuntimeError(f"the suite run did not end: {report['status']}")
        await asyncio.sleep(0.2)
    web: list[float] = []
    for _ in range(rounds * 2):
        await timed(web, get(http, f"suite-runs/{suite_run}"))
    conn = conn_of()
    base: list[float] = []
    try:
        for _ in range(rounds * 2):
            t = time.perf_counter()
            rows = conn.execute(REPORT_SQL, (suite_run,)).fetchall()
            ids = [i for r in rows for i in orjson.loads(r[3])]
            conn.execute(f"SELECT id FROM runs WHERE id IN ({', '.join('?' * len(ids))})",
                         ids).fetchall()
            base.append((time.perf_counter() - t) * 1000)
    finally:
        conn.close()
    return figure("suite_report", web, base, "the report's SQL with sqlite3 in process", 20.0,
                  {"cases": len(report["cases"]), "status": report["status"]})


# -- replay, boot, page ------------------------------------------------------------------------

async def replay_ms(http: aiohttp.ClientSession, run_id: str) -> float:
    """One whole replay of a finished long run: ms."""
    t = time.perf_counter()
    frames, _, _ = await count_sse(http, run_id)
    if frames < LONG_DELTAS:
        raise RuntimeError(f"replay of {run_id}: {frames} frames")
    return (time.perf_counter() - t) * 1000


async def replays(here: tuple[aiohttp.ClientSession, str], there: tuple[aiohttp.ClientSession,
                  str]) -> tuple[list[float], list[float]]:
    """REPLAYS of each, alternated (a busy second costs both alike), after one of each to
    warm the caches."""
    await replay_ms(*here)
    await replay_ms(*there)
    a, b = [], []
    for _ in range(REPLAYS):
        a.append(await replay_ms(*here))
        b.append(await replay_ms(*there))
    return a, b


async def interrupt(stack: Stack, http: aiohttp.ClientSession, session_id: str) -> str:
    """A run streaming when its daemon is SIGKILLed: what boot recovery has to end."""
    await call(http, "POST", "host/start")
    started = await call(http, "POST", f"sessions/{session_id}/runs",
                         {"parts": [{"kind": "text", "text": "tokens 100000"}]}, want=202)
    run_id = str(started["run_id"])
    deadline = time.monotonic() + 60
    while (await call(http, "GET", f"runs/{run_id}"))["status"] != "running":
        if time.monotonic() > deadline:
            raise RuntimeError("the run never started streaming")
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.5)  # some deltas committed
    assert stack.daemon is not None
    os.kill(stack.daemon.pid, signal.SIGKILL)
    await asyncio.to_thread(stack.daemon.popen.wait, 30)
    return run_id


async def boots(owned: Owned, stacks: list[tuple[Stack, str]]) -> list[list[float]]:
    """BOOTS boots of each stack's daemon (ms), the stacks taking turns (a busy second
    costs each alike): the first after a SIGKILL mid-run, the rest after a clean stop."""
    killed = []
    for stack, session_id in stacks:
        async with direct_session(stack) as http:
            killed.append(await interrupt(stack, http, session_id))
    samples: list[list[float]] = [[] for _ in stacks]
    for n in range(BOOTS):
        order = list(range(len(stacks)))
        for i in order if n % 2 == 0 else order[::-1]:
            stack = stacks[i][0]
            if n:
                assert stack.daemon is not None
                await asyncio.to_thread(stack.daemon.stop)
            t = time.perf_counter()
            await asyncio.to_thread(stack.start_daemon)
            samples[i].append((time.perf_counter() - t) * 1000)
    for (stack, _), run_id in zip(stacks, killed, strict=True):
        owned.note(stack)
        async with direct_session(stack) as http:
            run = await call(http, "GET", f"runs/{run_id}")
        if run["status"] != "interrupted":
            raise RuntimeError(f"the killed run was not recovered: {run['status']}")
    return samples


LISTED = """() => new Promise((resolve) => {
  const done = () => {
    if (document.querySelector('#session-list[data-loaded]')) {
      resolve(performance.now());
      return true;
    }
    return false;
  };
  if (!done()) new MutationObserver((_, obs) => { if (done()) obs.disconnect(); })
    .observe(document.documentElement, { subtree: true, attributes: true, childList: true });
})"""
FCP = """() => new Promise((resolve) => {
  new PerformanceObserver((list) => {
    const fcp = list.getEntries().find((e) => e.name === 'first-contentful-paint');
    if (fcp) resolve(fcp.startTime);
  }).observe({ type: 'paint', buffered: true });
})"""


async def page_loads(stack: Stack, loads: int) -> tuple[list[float], list[float]]:
    """(first paints, session lists shown), ms from navigation, through a front."""
    from playwright.async_api import async_playwright

    from llamon_playground.harness.browser import CHROMIUM, CHROMIUM_ARGS

    _, url, _ = await start_checked_front(stack)
    paints, listed = [], []
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=str(CHROMIUM),
                                                   args=CHROMIUM_ARGS)
        try:
            context = await browser.new_context(viewport={"width": 1280, "height": 720})
            login = await context.new_page()
            await login.goto(f"{url}/?token={stack.token}")
            await login.close()
            for _ in range(loads + 1):  # the first warms the browser's cache
                page = await context.new_page()
                await page.goto(f"{url}/")
                listed.append(float(await page.evaluate(LISTED)))
                paints.append(float(await page.evaluate(FCP)))
                await page.close()
        finally:
            await browser.close()
    return paints[1:], listed[1:]


# -- the section -------------------------------------------------------------------------------

async def bench_history_year(quick: bool, owned: Owned) -> list[Figure]:
    t0 = time.perf_counter()
    built = await built_history(quick, owned)
    got_s = time.perf_counter() - t0
    size = "quick" if quick else "full"
    rounds = ROUNDS[size]
    year_project = owned.project("lpyh")
    db = await asyncio.to_thread(install, built.path, year_project)
    log(f"history_year: history ready in {got_s:.0f} s (built in {built.info['build_s']} s "
        f"once), {db.stat().st_size / 1e6:.0f} MB")
    empty_project = owned.project("lpye")
    year = owned.start(year_project, ENV)
    empty = owned.start(empty_project, ENV)
    figures: list[Figure] = []
    try:
        def ro() -> sqlite3.Connection:
            return sqlite3.connect(f"file:{db}?mode=ro", uri=True)

        async with direct_session(year) as http, direct_session(empty) as http_empty:
            conn = ro()
            try:
                figures += await reads(http, conn, built, rounds)
            finally:
                conn.close()
            # Replay: one long run here, and the same run imported into the empty history.
            long_run = built.info["long_runs"][len(built.info["long_runs"]) // 2]
            doc = await call(http, "POST", "bundles/export", {"run_ids": [long_run]})
            answer = await call(http_empty, "POST", "bundles/import", {"bundle": doc},
                                want=201)
            copy = answer["runs"][long_run]
            await wait_compacted(empty.settings.db_path, copy, timeout=120)
            here, there = await replays((http, long_run), (http_empty, copy))
            log(f"history_year: replay of {LONG_DELTAS} deltas: median "
                f"{statistics.median(here):.0f} ms here, {statistics.median(there):.0f} ms on "
                "an empty history")
            figures.append(Figure(
                "history_year.replay", statistics.median(here), "ms",
                statistics.median(there), "the same run replayed from an empty history",
                Target("ratio", "<=", 1.25),
                {"samples_ms": [round(s, 1) for s in here],
                 "empty_samples_ms": [round(s, 1) for s in there], "deltas": LONG_DELTAS}))
            await call(http, "POST", "host/start")
            figures.append(await suite_report(http, ro, built, rounds))
            empty_session = (await call(http_empty, "POST", "sessions", {"title": "boot"},
                                        want=201))["id"]
        figures += await page_figures(year, empty, LOADS[size])
        year_boots, empty_boots = await boots(owned, [(year, built.info["big_sessions"][0]),
                                                      (empty, empty_session)])
        log(f"history_year: boots {[round(b) for b in year_boots]} ms (empty history "
            f"{[round(b) for b in empty_boots]} ms)")
        figures.append(Figure("history_year.boot", max(year_boots), "ms", max(empty_boots),
                              "the same boots on a history of one session",
                              Target("value", "<=", 1000.0),
                              {"boots_ms": [round(b) for b in year_boots],
                               "empty_boots_ms": [round(b) for b in empty_boots],
                               "first": "recovers a run interrupted by SIGKILL",
                               "poll_ms": 20}))
    finally:
        owned.close_stack(year)
        owned.close_stack(empty)
    # The writes (bundles, delete all) on a copy of their own: they end by deleting it all.
    figures += await history_year_ops.bench_ops(built, owned, quick)
    for f in figures:
        f.notes.update({"history": {k: built.info[k] for k in (
            "sessions", "runs", "events", "db_mb", "build_s")}})
    return figures


async def page_figures(year: Stack, empty: Stack, loads: int) -> list[Figure]:
    from llamon_playground.harness.browser import missing_browser
    why = missing_browser()
    if why:
        log(f"history_year: page skipped: {why}")
        return [Figure("history_year.page_sessions", None, "ms", None, "skipped", None,
                       {"skipped": why})]
    paints, listed = await page_loads(year, loads)
    empty_paints, empty_listed = await page_loads(empty, loads)
    log(f"history_year: page: session list shown at {statistics.median(listed):.0f} ms "
        f"(empty history {statistics.median(empty_listed):.0f} ms); first paint "
        f"{statistics.median(paints):.0f} ms (empty {statistics.median(empty_paints):.0f} ms)")
    notes = {"listed_ms": [round(x) for x in listed],
             "empty_listed_ms": [round(x) for x in empty_listed],
             "first_paints_ms": [round(x) for x in paints],
             "empty_first_paints_ms": [round(x) for x in empty_paints]}
    return [Figure("history_year.page_sessions", statistics.median(listed), "ms",
                   statistics.median(empty_listed), "the same page on an empty history",
                   Target("ratio", "<=", 1.5), notes),
            Figure("history_year.page_first_paint", statistics.median(paints), "ms",
                   statistics.median(empty_paints), "the same page on an empty history",
                   Target("ratio", "<=", 1.25), notes)]
