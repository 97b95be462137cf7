"""compare_1mb: comparing two runs whose outputs are 1 MB texts (in process).

An answer within a second, the diff work capped  vs  difflib.unified_diff of the first 2,000
lines of each, uncapped.
"""

from __future__ import annotations

import difflib
import statistics
import time
from typing import Any

import orjson

from llamon_playground.daemon.data.compare import compare_runs
from scripts.benchmarks.figures import Figure, Target
from scripts.benchmarks.owned import Owned


async def bench_compare(quick: bool, owned: Owned) -> list[Figure]:
    """Compare of two 1 MB texts; `owned` is unused (nothing is started)."""
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
