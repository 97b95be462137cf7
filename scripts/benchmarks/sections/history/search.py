"""search_100k: finding runs among 100,000 (GET /search on the daemon socket).

History is built through the daemon's own import path (bundles of runs with inputs,
outputs, labels, notes, statuses and scores), so the index is the one the triggers write.
Then a mix of searches (a rare word, a common word, two words, a phrase, a prefix, words
with each filter, filters alone) is asked in turn: the p99 of the answer's time  vs  the
same FTS5 query (the daemon's SQL, snippets included) with sqlite3 in process on the same
file.
"""

from __future__ import annotations

import asyncio
import io
import random
import sqlite3
import statistics
import time
from typing import Any
from urllib.parse import urlencode

import orjson

from llamon_playground.daemon.store.search.query import parse_query
from llamon_playground.daemon.store.search.service import statement
from scripts.benchmarks.clients.client import P, direct_session
from scripts.benchmarks.figures import Figure, Target, log, pct
from scripts.benchmarks.meters import MB
from scripts.benchmarks.owned import Owned

FULL = {"runs": 100_000, "rounds": 30}
QUICK = {"runs": 10_000, "rounds": 5}
RUNS_PER_BUNDLE = 20_000
RUNS_PER_SESSION = 1_000
VOCABULARY = 20_000
PAGE = 50
STATUSES = ["completed"] * 16 + ["failed"] * 3 + ["cancelled"]


def word(n: int) -> str:
    """A made-up word; low numbers are common (Zipf-like draws below)."""
    syllables = ["ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ze", "pu"]
    out, n = [], n + 1
    while n:
        out.append(syllables[n % 10])
        n //= 10
    return "".join(out)


def sentence(rng: random.Random, words: int) -> str:
    return " ".join(word(min(int(rng.paretovariate(0.8)) - 1, VOCABULARY - 1))
                    for _ in range(words))


def bundle(rng: random.Random, first: int, count: int) -> bytes:
    sessions, runs = [], []
    for n in range(first, first + count):
        sid = f"s{n // RUNS_PER_SESSION}"
        if n % RUNS_PER_SESSION == 0 or not sessions:
            sessions.append({"id": sid, "title": f"session {sentence(rng, 3)}",
                             "created_at": "2026-01-01T00:00:00Z"})
        status = rng.choice(STATUSES)
        scores = [{"evaluator": "judge", "passStatus": rng.choice(["pass"] * 9 + ["fail"])}]
        run: dict[str, Any] = {
            "id": f"r{n}", "session_id": sid, "status": status,
            "reason": "host_error" if status == "failed" else None,
            "created_at": f"2026-01-01T00:{n // 60000 % 60:02d}:{n // 1000 % 60:02d}Z",
            "context_id": f"c{n}",
            "input": {"parts": [{"kind": "text", "text": sentence(rng, rng.randint(5, 20))}]},
            "output": [{"kind": "text", "text": sentence(rng, rng.randint(20, 80))}],
            "scores": scores}
        if n % 10 == 0:
            run["label"] = f"label {sentence(rng, 2)}"
        if n % 20 == 0:
            run["note"] = sentence(rng, 8)
        runs.append(run)
    return orjson.dumps({"format": "llamon.playground.bundle/1", "sessions": sessions,
                         "runs": runs, "events": [], "blobs": {}})


def queries(session_id: str) -> list[dict[str, Any]]:
    rare, mid, common, other = word(15_000), word(300), word(0), word(1)
    return [
        {"q": rare}, {"q": mid}, {"q": common}, {"q": f"{common} {other}"},
        {"q": f'"{common} {other}"'}, {"q": common[:2] + mid[2] + "*"}, {"q": common[:2] + mid[2:4] + "*"}, {"q": f"{mid} {rare}"},
        {"q": common, "status": "failed"}, {"q": common, "status": "cancelled"},
        {"q": common, "evaluator_failed": "1"}, {"q": common, "labelled": "1"},
        {"q": mid, "reason": "host_error"}, {"q": common, "session": session_id},
        {"status": "cancelled", "labelled": "1"}, {"evaluator_failed": "1"},
        {"q": "nowordlikethis"},
    ]


def in_process(conn: sqlite3.Connection, params: dict[str, Any]) -> float:
    """The daemon's query for `params`, with sqlite3 on the same file: ms."""
    query = parse_query(params.get("q", ""), statuses=[params["status"]] if "status" in params
                        else [], reasons=[params["reason"]] if "reason" in params else [],
                        labelled="labelled" in params,
                        evaluator_failed="evaluator_failed" in params,
                        session_id=params.get("session"))
    sql, args = statement(query, 0, PAGE + 1)
    t = time.perf_counter()
    conn.execute(sql, args).fetchall()
    return (time.perf_counter() - t) * 1000


async def bench_search(quick: bool, owned: Owned) -> list[Figure]:
    size = QUICK if quick else FULL
    stack = owned.start(owned.project("lpse"))
    rng = random.Random(22)
    try:
        async with direct_session(stack) as http:
            t0 = time.perf_counter()
            session_id = ""
            for first in range(0, size["runs"], RUNS_PER_BUNDLE):
                body = await asyncio.to_thread(bundle, rng, first,
                                               min(RUNS_PER_BUNDLE, size["runs"] - first))
                async with http.post(f"{P}/bundles/import", data=io.BytesIO(body),
                                     headers={"Content-Type": "application/json"}) as resp:
                    answer = orjson.loads(await resp.read())
                    if resp.status != 201:
                        raise RuntimeError(f"import answered {resp.status}: {answer}")
                session_id = session_id or answer["sessions"]["s0"]
            import_s = time.perf_counter() - t0
            mix = queries(session_id)
            samples: list[float] = []
            hits: dict[str, int] = {}
            by_query: dict[str, list[float]] = {}
            for _ in range(size["rounds"]):
                for params in mix:
                    t = time.perf_counter()
                    async with http.get(f"{P}/search?{urlencode({**params, 'limit': PAGE})}"
                                        ) as resp:
                        page = orjson.loads(await resp.read())
                    samples.append((time.perf_counter() - t) * 1000)
                    by_query.setdefault(urlencode(params), []).append(samples[-1])
                    if resp.status != 200:
                        raise RuntimeError(f"search {params} answered {resp.status}: {page}")
                    hits[urlencode(params)] = len(page["hits"])
        db = stack.settings.db_path
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            base = [in_process(conn, params) for _ in range(size["rounds"]) for params in mix]
            index_bytes = sum(conn.execute(
                "SELECT COALESCE(SUM(pgsize), 0) FROM dbstat WHERE name LIKE 'run_search%'"
            ).fetchone()) if _has_dbstat(conn) else None
        finally:
            conn.close()
        db_mb = db.stat().st_size / MB
    finally:
        owned.close_stack(stack)
    log(f"search_100k: {size['runs']} runs imported in {import_s:.1f} s ({db_mb:.0f} MB); "
        f"p99 {pct(samples, 99):.1f} ms, median {statistics.median(samples):.1f} ms over "
        f"{len(samples)} searches (in process p99 {pct(base, 99):.1f} ms)")
    return [Figure("search_100k.p99", pct(samples, 99), "ms", pct(base, 99),
                   "the same FTS5 query with sqlite3 in process", Target("value", "<=", 50.0),
                   {"runs": size["runs"], "searches": len(samples),
                    "median_ms": round(statistics.median(samples), 2),
                    "max_ms": round(max(samples), 1), "import_s": round(import_s, 1),
                    "db_mb": round(db_mb, 1),
                    "index_mb": round(index_bytes / MB, 1) if index_bytes else None,
                    "hits_per_query": hits,
                    "p99_ms_per_query": {k: round(pct(v, 99), 1) for k, v in by_query.items()}})]


def _has_dbstat(conn: sqlite3.Connection) -> bool:
    try:
        conn.execute("SELECT 1 FROM dbstat LIMIT 1").fetchall()
    except sqlite3.Error:
        return False
    return True
