"""The CLI names a run by what it sent: a search hit matched by its session's title (or by
filters alone) prints the run's input, the title only as the reason; a suite case's line
leads with its input, `(chain of 2)` when it is more than one run."""

from __future__ import annotations

from typing import Any

from llamon_playground.cli.terminal.search import hit_line
from llamon_playground.cli.terminal.suite_commands import case_line


def hit(**fields: Any) -> Any:
    return {"id": "run_1", "created_at": "2026-12-04T10:00:00.000Z", "status": "completed",
            "reason": None, "label": None, "input_excerpt": "stream the second try",
            "excerpt": None, **fields}


def test_a_hit_by_its_title_prints_its_input_and_the_title_as_the_reason() -> None:
    line = hit_line(hit(excerpt={"field": "title", "text": "Quarterly planning",
                                 "matches": [[0, 9]]}))
    assert line == ("run_1  2026-12-04T10:00:00.000Z  completed  input: stream the second try"
                    "  (matched title: [Quarterly] planning)")


def test_a_hit_by_filters_alone_prints_its_input() -> None:
    assert hit_line(hit(status="failed", reason="host_error")).endswith(
        "failed (host_error)  input: stream the second try")


def test_a_hit_in_its_input_prints_the_input_marked_once() -> None:
    line = hit_line(hit(excerpt={"field": "input", "text": "stream the second try",
                                 "matches": [[11, 17]]}))
    assert line.endswith("completed  input: stream the [second] try")


def test_a_case_line_leads_with_its_input() -> None:
    row: Any = {"position": 1, "kind": "chain", "turns": 2, "input_excerpt": "ask",
                "state": "done", "status_before": "completed", "status_after": "completed",
                "status_moved": False}
    line = case_line(row, 3)
    assert line.startswith("[2/3] ask (chain of 2) ") and "completed → completed" in line
    single: Any = {**row, "kind": "run", "turns": 1, "input_excerpt": "x" * 60}
    assert case_line(single, 3).startswith(f"[2/3] {'x' * 39}… ")
