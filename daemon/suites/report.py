"""A suite run's report: per case, its result against its baseline; for the suite, counts.

Counts only: like Compare, the report gives no verdict of its own (`automatic_verdict` is
always null); which change matters is the user's call. A case's row is computed once, when
the case ends (`case_row`), so reading a report of hundreds of cases only adds rows up.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from llamon_playground.daemon.data.compare import compare_runs

FAIL_WORDS = ("fail", "failed")


def as_run(side: dict[str, Any], run_id: str | None) -> dict[str, Any]:
    """A case's baseline or result, shaped as the run document Compare reads."""
    return {"id": run_id, "status": side.get("status"), "reason": side.get("reason"),
            "duration_ms": side.get("duration_ms"), "output": side.get("output") or [],
            "scores": side.get("scores") or [], "input": {"parts": []},
            "code_fingerprint": side.get("code_fingerprint")}


def compare_case(baseline: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
    """The whole Compare answer of a case (text diff in full): what opening a row shows."""
    return compare_runs(as_run(baseline, baseline.get("run_id")),
                        as_run(result, result.get("run_id")))


def _diff_lines(unified: str) -> int:
    return sum(1 for line in unified.splitlines()
               if line[:1] in "+-" and not line.startswith(("+++", "---")))


def _passed(status: Any) -> bool | None:
    if status is None:
        return None
    return str(status).lower() not in FAIL_WORDS


def case_row(baseline: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
    """One case's line of the report: what moved, and how much (never whether it is good)."""
    doc = compare_case(baseline, result)
    scores = [{"evaluator": s["evaluator"], "scope": s["scope"], "node": s["node"],
               "before": s["left"], "after": s["right"], "delta": s["delta"],
               "pass_before": s["left_pass_status"], "pass_after": s["right_pass_status"]}
              for s in doc["scores"]]
    data = [c["path"] for c in doc["data"]["changes"]]
    files = sum(1 for f in doc["files"] if f["changed"])
    text_lines = _diff_lines(doc["text"]["unified_diff"])
    moved = baseline.get("status") != result.get("status")
    score_moved = any((s["delta"] not in (None, 0) or s["before"] is None
                       or s["after"] is None or s["pass_before"] != s["pass_after"])
                      for s in scores)
    return {"status_before": baseline.get("status"), "status_after": result.get("status"),
            "reason_after": result.get("reason"), "status_moved": moved,
            "duration_delta_ms": doc["duration_delta_ms"],
            "text_changed": not doc["text"]["same"], "text_diff_lines": text_lines,
            "data_changes": data, "files_changed": files, "scores": scores,
            "changed": bool(moved or not doc["text"]["same"] or data or files or score_moved)}


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The suite's counts over its finished cases: what changed, which statuses moved, each
    evaluator's mean before → after and its pass → fail / fail → pass counts."""
    done = [r for r in rows if r.get("row")]
    states = Counter(r["state"] for r in rows)
    moved = Counter((r["row"]["status_before"], r["row"]["status_after"]) for r in done
                    if r["row"]["status_moved"])
    evaluators: dict[str, dict[str, Any]] = {}
    for r in done:
        for s in r["row"]["scores"]:
            e = evaluators.setdefault(str(s["evaluator"]), {"before": [], "after": [],
                                                       "pass_to_fail": 0, "fail_to_pass": 0})
            if isinstance(s["before"], int | float):
                e["before"].append(s["before"])
            if isinstance(s["after"], int | float):
                e["after"].append(s["after"])
            was, now = _passed(s["pass_before"]), _passed(s["pass_after"])
            if was is True and now is False:
                e["pass_to_fail"] += 1
            elif was is False and now is True:
                e["fail_to_pass"] += 1
    return {
        "cases": len(rows), "done": states.get("done", 0),
        "skipped": states.get("skipped", 0),
        "pending": states.get("pending", 0) + states.get("running", 0),
        "changed": sum(1 for r in done if r["row"]["changed"]),
        "flaky": sum(1 for r in done if r["row"].get("mark") == "flaky"),
        "statuses_moved": [{"before": a, "after": b, "count": n}
                           for (a, b), n in sorted(moved.items(), key=lambda i: str(i[0]))],
        "status_moved_cases": sum(moved.values()),
        "evaluators": [{"evaluator": name, "mean_before": _mean(e["before"]),
                        "mean_after": _mean(e["after"]), "pass_to_fail": e["pass_to_fail"],
                        "fail_to_pass": e["fail_to_pass"]}
                       for name, e in sorted(evaluators.items())],
    }


def _mean(values: list[float]) -> float | None:
    return round(sum(values) / len(values), 9) if values else None
