"""Repetitions: a case run N times, told apart as `same`, `changed` or `flaky`.

A repetition's *outcome* is what the report compares: its status, its output (text, data,
files by hash) and its latest score (and pass status) per evaluator; never its duration or
run ids. A case is **flaky** when its own repetitions' outcomes differ, **changed** when
they all agree and match none of the baseline's (a baseline may hold repetitions of its
own), else **same**. Pure: the runner calls it when a case's last repetition ended.
"""

from __future__ import annotations

from statistics import median
from typing import Any

import orjson

from llamon_playground.daemon.data.compare import latest_scores

SAME, CHANGED, FLAKY = "same", "changed", "flaky"
OUTCOME_PART_KEYS = ("kind", "text", "data", "sha256")


def outcome(result: dict[str, Any]) -> bytes:
    """A result's outcome as comparable bytes (equal bytes: the report would see no move)."""
    parts = [{k: p.get(k) for k in OUTCOME_PART_KEYS if k in p}
             for p in result.get("output") or [] if isinstance(p, dict)]
    scores = sorted(([*key, s.get("score"), s.get("passStatus")]
                     for key, s in latest_scores(result.get("scores") or []).items()),
                    key=lambda row: orjson.dumps(row, default=str))
    return orjson.dumps([result.get("status"), parts, scores], default=str,
                        option=orjson.OPT_SORT_KEYS)


def baseline_outcomes(baseline: dict[str, Any]) -> set[bytes]:
    """The outcomes a baseline allows: each of its repetitions', or its one result's."""
    reps = baseline.get("repetitions") or [baseline]
    return {outcome(r) for r in reps}


def mark(baseline: dict[str, Any], results: list[dict[str, Any]]) -> str:
    """`flaky`, `changed` or `same` (see the module's docstring)."""
    seen = {outcome(r) for r in results}
    if len(seen) > 1:
        return FLAKY
    return SAME if seen <= baseline_outcomes(baseline) else CHANGED


def _spread(values: list[float]) -> dict[str, float] | None:
    if not values:
        return None
    return {"min": min(values), "median": round(median(values), 9), "max": max(values)}


def repeat_fields(baseline: dict[str, Any], results: list[dict[str, Any]]) -> dict[str, Any]:
    """What a case's row says of its repetitions: how many, the share that ended with the
    baseline's status, each score's and the duration's spread (min, median, max), the mark."""
    status = baseline.get("status")
    scores: dict[str, list[float]] = {}
    for r in results:
        for key, s in latest_scores(r.get("scores") or []).items():
            value = s.get("score")
            if isinstance(value, int | float) and not isinstance(value, bool):
                scores.setdefault(str(key[0]), []).append(value)
    durations = [float(r["duration_ms"]) for r in results
                 if isinstance(r.get("duration_ms"), int | float)]
    agree = sum(1 for r in results if r.get("status") == status)
    return {"repeat": len(results),
            "baseline_status_share": round(agree / len(results), 6) if results else None,
            "statuses": sorted({str(r.get("status")) for r in results}),
            "score_spread": [{"evaluator": name, **(_spread(values) or {})}
                             for name, values in sorted(scores.items())],
            "duration_spread": _spread(durations),
            "mark": mark(baseline, results)}
