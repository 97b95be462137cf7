"""Structural differences between two JSON values, as JSON Pointer paths (RFC 6901).

Used by compare for DataPart changes: `{path, op: add|remove|replace, left, right}`.
Objects are matched by key, arrays by index (no move detection: a list of changes to read,
not a patch to apply). Walks with an explicit stack, so a deeply nested stored value never
hits Python's recursion limit.
"""

from __future__ import annotations

from typing import Any


class _Missing:
    """Marks a key or index that exists on one side only."""


MISSING: Any = _Missing()


def pointer_token(key: str | int) -> str:
    return str(key).replace("~", "~0").replace("/", "~1")


def same_scalar(a: Any, b: Any) -> bool:
    """JSON equality of two non-containers: 1 == 1.0 (protobuf turns ints into floats),
    but True != 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    return type(a) is type(b) and bool(a == b)


def json_changes(left: Any, right: Any, limit: int) -> tuple[list[dict[str, Any]], bool]:
    """The changes from `left` to `right` in document order; True when cut at `limit`."""
    changes: list[dict[str, Any]] = []
    stack: list[tuple[str, Any, Any]] = [("", left, right)]
    while stack:
        path, a, b = stack.pop()
        if isinstance(a, dict) and isinstance(b, dict):
            keys: list[Any] = [*a, *(k for k in b if k not in a)]
            children = [(k, a.get(k, MISSING), b.get(k, MISSING)) for k in keys]
        elif isinstance(a, list) and isinstance(b, list):
            children = [(i, a[i] if i < len(a) else MISSING, b[i] if i < len(b) else MISSING)
                        for i in range(max(len(a), len(b)))]
        else:
            change = _leaf_change(path, a, b)
            if change is not None:
                if len(changes) >= limit:
                    return changes, True
                changes.append(change)
            continue
        # Reversed onto the stack so that changes come out in document order.
        stack.extend((f"{path}/{pointer_token(k)}", x, y) for k, x, y in reversed(children))
    return changes, False


def _leaf_change(path: str, a: Any, b: Any) -> dict[str, Any] | None:
    if a is MISSING:
        return {"path": path, "op": "add", "left": None, "right": b}
    if b is MISSING:
        return {"path": path, "op": "remove", "left": a, "right": None}
    if isinstance(a, dict | list) or isinstance(b, dict | list):
        return {"path": path, "op": "replace", "left": a, "right": b}  # container kinds differ
    if same_scalar(a, b):
        return None
    return {"path": path, "op": "replace", "left": a, "right": b}
