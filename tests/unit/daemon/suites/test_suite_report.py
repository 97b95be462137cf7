"""A suite case's report row and the suite's counts: what moved, never a verdict."""

from __future__ import annotations

from typing import Any

from llamon_playground.daemon.suites.cases import result_of
from llamon_playground.daemon.suites.report import case_row, summary


def side(status: str, text: str, scores: list[dict[str, Any]], ms: float = 10.0,
         data: dict[str, Any] | None = None) -> dict[str, Any]:
    output: list[dict[str, Any]] = [{"kind": "text", "text": text}]
    if data is not None:
        output.append({"kind": "data", "data": data})
    return {"run_id": "run_x", "run_ids": ["run_x"], "status": status, "reason": None,
            "duration_ms": ms, "output": output, "scores": scores}


def score(name: str, value: float, passed: str) -> dict[str, Any]:
    return {"evaluator": name, "score": value, "passStatus": passed}


def test_an_unchanged_case_is_not_changed() -> None:
    a = side("completed", "hello", [score("e", 1.0, "pass")])
    row = case_row(a, a)
    assert row["changed"] is False and row["status_moved"] is False
    assert row["text_diff_lines"] == 0 and row["data_changes"] == []


def test_a_row_counts_text_data_score_and_status_moves() -> None:
    before = side("completed", "a\nb", [score("e", 1.0, "pass")], 10, {"x": 1})
    after = side("failed", "a\nc", [score("e", 0.5, "fail")], 25, {"x": 2})
    row = case_row(before, after)
    assert row["status_moved"] and row["changed"]
    assert (row["status_before"], row["status_after"]) == ("completed", "failed")
    assert row["duration_delta_ms"] == 15
    assert row["text_diff_lines"] == 2  # one line out, one in
    assert row["data_changes"] == ["/x"]
    assert [(s["delta"], s["pass_before"], s["pass_after"]) for s in row["scores"]] == [
        (-0.5, "pass", "fail")]


def test_a_pass_status_flip_alone_is_a_change() -> None:
    row = case_row(side("completed", "t", [score("e", 1.0, "pass")]),
                   side("completed", "t", [score("e", 1.0, "fail")]))
    assert row["changed"] and not row["status_moved"]


def test_summary_counts_moves_and_means_without_a_verdict() -> None:
    rows = [
        {"state": "done", "row": case_row(side("completed", "t", [score("e", 1.0, "pass")]),
                                          side("completed", "u", [score("e", 0.0, "fail")]))},
        {"state": "done", "row": case_row(side("failed", "t", [score("e", 0.0, "fail")]),
                                          side("completed", "t", [score("e", 1.0, "pass")]))},
        {"state": "skipped", "row": None},
        {"state": "pending", "row": None},
    ]
    s = summary(rows)
    assert (s["cases"], s["done"], s["skipped"], s["pending"], s["changed"]) == (4, 2, 1, 1, 2)
    assert s["statuses_moved"] == [{"before": "failed", "after": "completed", "count": 1}]
    assert s["evaluators"] == [{"evaluator": "e", "mean_before": 0.5, "mean_after": 0.5,
                                "pass_to_fail": 1, "fail_to_pass": 1}]
    assert "verdict" not in s


def test_a_multi_turn_result_is_its_last_status_and_every_turns_output() -> None:
    turns = [{"id": "r1", "status": "input_required", "reason": None, "duration_ms": 5.0,
              "output": [{"kind": "text", "text": "name?"}], "scores": [],
              "code_fingerprint": "f"},
             {"id": "r2", "status": "completed", "reason": None, "duration_ms": 7.5,
              "output": [{"kind": "text", "text": "hi"}], "scores": [score("e", 1, "pass")],
              "code_fingerprint": "f"}]
    result = result_of(turns)
    assert result["status"] == "completed" and result["run_ids"] == ["r1", "r2"]
    assert result["duration_ms"] == 12.5 and len(result["output"]) == 2
    assert result_of([])["status"] is None
