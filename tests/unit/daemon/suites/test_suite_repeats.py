"""Repetitions marked as a table: flaky when a case's own runs disagree, changed when they
agree and match none of the baseline's outcomes, same otherwise."""

from __future__ import annotations

from typing import Any

import pytest

from llamon_playground.daemon.suites.repeats import CHANGED, FLAKY, SAME, mark, repeat_fields


def result(text: str, status: str = "completed", score: float = 1,
           duration: float = 10) -> dict[str, Any]:
    return {"status": status, "output": [{"kind": "text", "text": text}],
            "scores": [{"evaluator": "e", "score": score, "passStatus": "pass"}],
            "duration_ms": duration, "run_ids": ["x"]}


@pytest.mark.parametrize(("baseline", "runs", "expected"), [
    (result("a"), [result("a")] * 3, SAME),
    (result("a"), [result("b")] * 3, CHANGED),
    (result("a"), [result("a"), result("b"), result("a")], FLAKY),
    (result("a"), [result("a", score=2)] * 2, CHANGED),
    (result("a"), [result("a", status="failed")] * 2, CHANGED),
    (result("a"), [result("a", duration=d) for d in (1, 50, 900)], SAME),
    ({**result("a"), "repetitions": [result("a"), result("b")]}, [result("b")] * 2, SAME),
    ({**result("a"), "repetitions": [result("a"), result("b")]}, [result("c")] * 2, CHANGED),
    (result("a"), [result("a")], SAME),
    (result("a"), [result("z")], CHANGED),
])
def test_marks(baseline: dict[str, Any], runs: list[dict[str, Any]], expected: str) -> None:
    assert mark(baseline, runs) == expected


def test_spreads_and_the_share_with_the_baseline_status() -> None:
    runs = [result("a", score=s, duration=d, status=st)
            for s, d, st in ((1, 10, "completed"), (3, 30, "failed"), (2, 20, "completed"))]
    fields = repeat_fields(result("a"), runs)
    assert fields["repeat"] == 3 and fields["baseline_status_share"] == round(2 / 3, 6)
    assert fields["score_spread"] == [{"evaluator": "e", "min": 1, "median": 2, "max": 3}]
    assert fields["duration_spread"] == {"min": 10, "median": 20, "max": 30}
    assert fields["statuses"] == ["completed", "failed"] and fields["mark"] == FLAKY
