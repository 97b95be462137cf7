"""A run's input in one line, as every list names a run: a text part's text (whitespace
folded, cut at 160 characters), a data part as `{schema}`, a file by name, `(+N parts)`;
read in SQL from the stored input the same way as from parts in hand."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

import pytest

from llamon_playground.daemon.store.search.run_line import (
    INPUT_CHARS,
    input_line,
    input_line_sql,
    parts_line,
)

CASES: list[tuple[list[dict[str, Any]], str]] = [
    ([{"kind": "text", "text": "stream  hello\n world"}], "stream hello world"),
    ([{"kind": "text", "text": "x" * 500}], "x" * (INPUT_CHARS - 1) + "…"),
    ([{"kind": "data", "data": {"schema": "approval.v1", "amount": 3}}], "{approval.v1}"),
    ([{"kind": "data", "data": {"amount": 3}}], "{data}"),
    ([{"kind": "file", "name": "report.pdf", "sha256": "ab"}], "file report.pdf"),
    ([{"kind": "file", "uri": "https://x/y.pdf"}], "file https://x/y.pdf"),
    ([{"kind": "text", "text": "data"}, {"kind": "data", "data": {}}], "data (+1 parts)"),
    ([], ""),
]


@pytest.mark.parametrize(("parts", "line"), CASES)
def test_a_line_from_sql_and_from_parts(parts: list[dict[str, Any]], line: str) -> None:
    assert parts_line(parts) == line
    conn = sqlite3.connect(":memory:")
    conn.row_factory = sqlite3.Row
    try:
        conn.execute("CREATE TABLE runs (input TEXT)")
        conn.execute("INSERT INTO runs VALUES (?)", (json.dumps({"parts": parts}),))
        row = conn.execute(f"SELECT {input_line_sql('r.input')} FROM runs r").fetchone()
        assert input_line(row) == line
        # A suite case's first turn, as its report reads it.
        conn.execute("CREATE TABLE suite_cases (turns TEXT)")
        conn.execute("INSERT INTO suite_cases VALUES (?)",
                     (json.dumps([{"input": {"parts": parts}, "resume": False}]),))
        row = conn.execute(
            f"SELECT {input_line_sql('c.turns', '$[0].input')} FROM suite_cases c").fetchone()
        assert input_line(row) == line
    finally:
        conn.close()
