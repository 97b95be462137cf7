"""What a list line says of a run besides its status and time: its input in one line.

Search hits and suite cases name their runs by what was sent (a hit found by its session's
title, or by filters alone, must still say which run it is). The line is read in SQL from
the first input part only, its text cut there, so a page of lines costs the same however
large the inputs are.
"""

from __future__ import annotations

import sqlite3
from typing import Any

INPUT_CHARS = 160  # of the line: more never shows in one line of a list
_TEXT_CHARS = INPUT_CHARS * 4  # read from SQLite, before whitespace is folded


def input_line_sql(column: str, path: str = "$") -> str:
    """Select-list items (`input_*` columns) for `input_line`, reading the stored input
    (`{"parts": [...]}`) at JSON `path` of `column` (a run's `r.input`, a case's first turn
    `c.turns` at `$[0].input`)."""
    first = f"json_extract({column}, '{path}.parts[0]"
    return (f"{first}.kind') AS input_kind, "
            f"substr({first}.text'), 1, {_TEXT_CHARS}) AS input_text, "
            f"{first}.data.schema') AS input_schema, "
            f"coalesce({first}.name'), {first}.uri')) AS input_file, "
            f"json_array_length({column}, '{path}.parts') AS input_parts")


def input_line(row: sqlite3.Row | dict[str, Any]) -> str:
    """The run's input in one line: a text part's text, a data part as `{schema}`, a file
    by name; `(+N parts)` when more followed; at most INPUT_CHARS characters."""
    kind = row["input_kind"]
    if kind == "text":
        first = " ".join(str(row["input_text"] or "").split())
    elif kind == "data":
        first = f"{{{row['input_schema']}}}" if isinstance(row["input_schema"], str) else "{data}"
    elif kind == "file":
        first = f"file {row['input_file'] or ''}".rstrip()
    else:
        first = str(kind or "")
    more = (row["input_parts"] or 0) - 1
    line = f"{first} (+{more} parts)" if more > 0 else first
    return line if len(line) <= INPUT_CHARS else f"{line[:INPUT_CHARS - 1]}…"


def parts_line(parts: list[dict[str, Any]]) -> str:
    """`input_line` of stored parts already in hand (a suite case's first turn)."""
    first = parts[0] if parts and isinstance(parts[0], dict) else {}
    data = first.get("data")
    return input_line({
        "input_kind": first.get("kind"),
        "input_text": str(first.get("text") or "")[:_TEXT_CHARS],
        "input_schema": data.get("schema") if isinstance(data, dict) else None,
        "input_file": first.get("name") or first.get("uri"),
        "input_parts": len(parts)})
