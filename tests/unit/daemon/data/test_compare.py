"""Compare: text diff, DataPart changes, FileParts, evaluator rows, the diff cap."""

from __future__ import annotations

import difflib
import sqlite3
from pathlib import Path
from typing import Any

import orjson

from llamon_playground.common.config import build_settings
from llamon_playground.daemon.data.compare import (
    MAX_DIFF_LINES,
    MAX_TEXT_CHARS,
    compare_runs,
    score_rows,
    text_diff,
)
from llamon_playground.daemon.data.json_diff import json_changes
from llamon_playground.daemon.store.database import Store
from llamon_playground.daemon.store.history import create_session, get_run, insert_run


def run(run_id: str, output: list[dict[str, Any]], *, status: str = "completed",
        duration_ms: float | None = 100.0, scores: list[dict[str, Any]] | None = None,
        parts: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"id": run_id, "session_id": "ses_x", "status": status, "reason": None,
            "duration_ms": duration_ms, "created_at": "2024-01-01T00:00:00.000Z",
            "input": {"parts": parts or []}, "output": output, "error": None,
            "scores": scores or []}


def text(value: str) -> dict[str, Any]:
    return {"kind": "text", "text": value}


def test_status_duration_and_delta_and_no_verdict() -> None:
    got = compare_runs(run("run_a", [], duration_ms=120.5),
                       run("run_b", [], status="failed", duration_ms=100.0))
    assert got["left"]["status"] == "completed" and got["right"]["status"] == "failed"
    assert got["duration_delta_ms"] == -20.5
    assert got["automatic_verdict"] is None
    missing = compare_runs(run("run_a", [], duration_ms=None), run("run_b", []))
    assert missing["duration_delta_ms"] is None


def test_text_in_full_and_unified_diff() -> None:
    got = compare_runs(run("run_a", [text("a b c")]), run("run_b", [text("a x c")]))["text"]
    assert got["left"] == "a b c" and got["right"] == "a x c" and not got["same"]
    assert got["unified_diff"] == "--- left\n+++ right\n@@ -1 +1 @@\n-a b c\n+a x c\n"
    same = text_diff("same", "same")
    assert same["same"] and same["unified_diff"] == "" and not same["truncated"]


def test_diff_of_a_small_edit_in_a_long_text_matches_difflib_line_numbers() -> None:
    left = "\n".join(f"line {i}" for i in range(5000))
    right = left.replace("line 2500\n", "line 2500 changed\n")
    expected = "\n".join(difflib.unified_diff(left.splitlines(), right.splitlines(), "left",
                                              "right", lineterm="")) + "\n"
    got = text_diff(left, right)
    assert got["unified_diff"] == expected and not got["truncated"]
    assert "@@ -2498,7 +2498,7 @@" in got["unified_diff"]


def test_two_one_megabyte_texts_cap_the_diff_and_say_truncated() -> None:
    # The speed (an answer within a second) is measured by `scripts/bench` (compare_1mb).
    left = "\n".join(f"left line {i} {i * 7919 % 10007}" for i in range(60000))[:1_000_000]
    right = "\n".join(f"right line {i} {i * 104729 % 10007}" for i in range(60000))[:1_000_000]
    got = compare_runs(run("run_a", [text(left)]), run("run_b", [text(right)]))
    assert got["text"]["truncated"] and str(MAX_DIFF_LINES) in got["text"]["note"]
    assert got["text"]["left"] == left and got["text"]["right"] == right


def test_data_changes_by_json_pointer() -> None:
    left = {"schema": "r.v1", "count": 3, "items": ["a", "b", "c"], "nested": {"ok": True},
            "a/b": 1, "gone": {"x": 1}, "n": 18}
    right = {"schema": "r.v1", "count": 4, "items": ["a", "z"], "nested": {"ok": True,
             "deep": {"k": [1]}}, "a/b": 2, "n": 18.0, "flag": 1}
    got = compare_runs(run("run_a", [{"kind": "data", "data": left}]),
                       run("run_b", [{"kind": "data", "data": right}]))["data"]
    assert got == {"truncated": False, "changes": [
        {"part": 0, "path": "/count", "op": "replace", "left": 3, "right": 4},
        {"part": 0, "path": "/items/1", "op": "replace", "left": "b", "right": "z"},
        {"part": 0, "path": "/items/2", "op": "remove", "left": "c", "right": None},
        {"part": 0, "path": "/nested/deep", "op": "add", "left": None, "right": {"k": [1]}},
        {"part": 0, "path": "/a~1b", "op": "replace", "left": 1, "right": 2},
        {"part": 0, "path": "/gone", "op": "remove", "left": {"x": 1}, "right": None},
        {"part": 0, "path": "/flag", "op": "add", "left": None, "right": 1},
    ]}


def test_data_part_on_one_side_and_type_changes() -> None:
    got = compare_runs(run("run_a", []), run("run_b", [{"kind": "data", "data": {"a": 1}}]))
    assert got["data"]["changes"] == [{"part": 0, "path": "", "op": "add", "left": None,
                                       "right": {"a": 1}}]
    changes, cut = json_changes({"v": True, "w": [1], "x": 0}, {"v": 1, "w": {"0": 1}, "x": 0},
                                100)
    assert [c["path"] for c in changes] == ["/v", "/w"] and not cut


def test_data_changes_are_capped_and_deep_values_do_not_recurse() -> None:
    changes, cut = json_changes({str(i): i for i in range(50)}, {}, 10)
    assert len(changes) == 10 and cut
    deep_left: Any = 1
    deep_right: Any = 2
    for _ in range(5000):  # deeper than Python's recursion limit
        deep_left, deep_right = {"k": deep_left}, {"k": deep_right}
    changes, _ = json_changes(deep_left, deep_right, 10)
    assert changes[0]["path"] == "/k" * 5000 and changes[0]["op"] == "replace"


def test_file_parts_metadata_hash_uri_and_same_content() -> None:
    local = {"kind": "file", "sha256": "a" * 64, "size": 3, "name": "x.txt",
             "mime": "text/plain", "source": "output"}
    renamed = {**local, "name": "y.txt"}
    other = {**local, "sha256": "b" * 64, "size": 4}
    uri = {"kind": "file", "uri": "https://h/r.pdf", "name": "r.pdf", "mime": "application/pdf",
           "availability": "external", "replay": "unavailable_for_replay"}
    got = compare_runs(run("run_a", [local, local, uri]),
                       run("run_b", [renamed, other, uri, local]))["files"]
    assert [row["same_content"] for row in got] == [True, False, None, False]
    assert got[0]["changed"] == ["name"]
    assert got[1]["changed"] == ["size", "sha256"]
    assert got[2]["changed"] == [] and got[2]["left"]["uri"] == "https://h/r.pdf"
    assert got[3]["left"] is None and got[3]["right"]["sha256"] == "a" * 64


def test_one_row_per_evaluator_missing_side_is_null_not_zero() -> None:
    left = [{"evaluator": "relevance", "score": 0.7, "passStatus": "pass"},
            {"evaluator": "toxicity", "score": 0.1},
            {"name": "legacy", "score": 1},
            {"evaluator": "relevance", "score": 0.75, "passStatus": "pass"}]  # later wins
    right = [{"evaluator": "relevance", "score": 0.5, "passStatus": "fail"},
             {"evaluator": "grounded", "score": 1.0, "node": "answer"},
             {"evaluator": "label", "score": "good"}]
    rows = {r["evaluator"]: r for r in score_rows(left, right)}
    assert list(rows) == ["relevance", "toxicity", "legacy", "grounded", "label"]
    assert rows["relevance"] == {"evaluator": "relevance", "scope": None, "node": None,
                                 "left": 0.75, "right": 0.5, "delta": -0.25,
                                 "left_pass_status": "pass", "right_pass_status": "fail"}
    assert rows["toxicity"]["right"] is None and rows["toxicity"]["delta"] is None
    assert rows["grounded"]["left"] is None and rows["grounded"]["node"] == "answer"
    assert rows["grounded"]["delta"] is None
    assert rows["label"]["delta"] is None  # not a number


async def test_scores_written_through_the_store_reach_compare(tmp_path: Path) -> None:
    """A run row whose scores were set by a store write (as the capture channel will)."""
    settings = build_settings(tmp_path, {"LLAMON_PLAYGROUND_RUNTIME_DIR": str(tmp_path / "rt")})
    store = Store(settings)
    await store.open()
    try:
        session = await create_session(store, "t", {})
        for run_id, body in (("run_l", "a b c"), ("run_r", "a x c")):
            await insert_run(store, {
                "id": run_id, "session_id": session["id"], "status": "completed",
                "created_at": "2024-01-01T00:00:00.000Z", "context_id": "c",
                "input": {"parts": [text("stream " + body)]}, "output": [text(body)],
                "duration_ms": 10.0}, [])

        def set_scores(conn: sqlite3.Connection) -> None:
            conn.execute("UPDATE runs SET scores = ? WHERE id = 'run_l'", (orjson.dumps(
                [{"evaluator": "exact", "score": 1.0, "passStatus": "pass"}]).decode(),))
            conn.execute("UPDATE runs SET scores = ? WHERE id = 'run_r'", (orjson.dumps(
                [{"evaluator": "exact", "score": 0.0, "passStatus": "fail",
                  "duration_ms": 3}]).decode(),))
        await store.write(set_scores)
        left, right = await get_run(store, "run_l"), await get_run(store, "run_r")
        assert left is not None and right is not None
        got = compare_runs(left, right)
        assert got["scores"] == [{"evaluator": "exact", "scope": None, "node": None,
                                  "left": 1.0, "right": 0.0, "delta": -1.0,
                                  "left_pass_status": "pass", "right_pass_status": "fail"}]
        assert got["input"]["text"]["unified_diff"].endswith("-stream a b c\n+stream a x c\n")
    finally:
        await store.close()


def test_two_very_large_texts_answer_a_bounded_diff_that_says_it_is_cut() -> None:
    left = "\n".join(f"line {i}" for i in range(400_000))
    right = left.replace("line 7\n", "line seven\n", 1) + "\nmore"
    assert len(left) > MAX_TEXT_CHARS
    doc = text_diff(left, right)
    assert doc["truncated"] is True and doc["same"] is False
    assert doc["cut"] == {"left_chars": len(left), "right_chars": len(right),
                          "kept_chars": MAX_TEXT_CHARS}
    assert len(doc["left"]) == len(doc["right"]) == MAX_TEXT_CHARS
    assert str(len(left)) in doc["note"]
    assert "+line seven" in doc["unified_diff"]
