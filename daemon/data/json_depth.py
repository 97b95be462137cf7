"""How deep a JSON value nests, measured without recursion.

orjson already refuses documents nested deeper than 1024 levels, but Python code that walks
a value recursively (redaction, diffs, validation) would hit the interpreter's recursion
limit first, so stored and imported values get a much lower cap.
"""

from __future__ import annotations

from typing import Any

from llamon_playground.daemon.errors import BadRequest

MAX_DEPTH = 64


def json_depth(value: Any, stop_at: int = MAX_DEPTH + 1) -> int:
    """Levels of containers in `value` (a scalar is 0); stops counting past `stop_at`."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        depth += 1
        if depth > deepest:
            deepest = depth
            if deepest >= stop_at:
                return deepest
        stack.extend((child, depth) for child in children)
    return deepest


def check_depth(value: Any, where: str, limit: int = MAX_DEPTH) -> None:
    """400 `nesting_too_deep` when `value` nests deeper than `limit` levels."""
    if json_depth(value, limit + 1) > limit:
        raise BadRequest(f"{where} nests deeper than {limit} levels", code="nesting_too_deep",
                         limit=limit)
