"""FTS5's marked snippets as plain text with match offsets (never HTML: the page and the
CLI mark the matches their own way)."""

from __future__ import annotations

from typing import Any

START, END = "\x02", "\x03"  # the index never holds these (the view strips them)
ELLIPSIS = "…"
SNIPPET_TOKENS = 12


def snippet_sql(column: int) -> str:
    return (f"snippet(run_search, {column}, char(2), char(3), '{ELLIPSIS}', "
            f"{SNIPPET_TOKENS})")


def read_marked(marked: str) -> tuple[str, list[list[int]]]:
    """The text without its marks, and each match's [start, end) in code points."""
    text: list[str] = []
    matches: list[list[int]] = []
    at = 0
    for index, piece in enumerate(marked.split(START)):
        inside, _, after = piece.partition(END) if index else ("", "", piece)
        if inside:
            matches.append([at, at + len(inside)])
        text += (inside, after)
        at += len(inside) + len(after)
    return "".join(text), matches


def best_excerpt(fields: tuple[str, ...], snippets: list[str | None]) -> dict[str, Any] | None:
    """The first field (in `fields` order) whose snippet holds a match."""
    for name, marked in zip(fields, snippets):
        if marked and START in marked:
            text, matches = read_marked(marked)
            return {"field": name, "text": text, "matches": matches}
    return None
