"""FTS5's marked snippets as plain text with match offsets (never HTML: the page and the
CLI mark the matches their own way)."""

from __future__ import annotations

import re
from typing import Any

START, END = "\x02", "\x03"  # the index never holds these (the view strips them)
ELLIPSIS = "…"
SNIPPET_TOKENS = 12
BEFORE_TOKENS = 4  # of a cut excerpt's tokens, those before its first match
# FTS5's snippet() scores a window at every match against every other match: quadratic in
# a column's matches, 20 ms for a common word in a 60 KB answer. A column whose stored
# JSON is longer than this is marked whole by highlight() instead (linear) and cut around
# its first match here (`cut_excerpt`).
LONG_CHARS = 4096
_CHUNK = re.compile(r"\S+\s*")


def snippet_sql(column: int, long_if: str | None = None) -> str:
    """The SQL of a column's marked excerpt. With `long_if` (an SQL condition: the column is
    long), that column comes whole and marked when it holds, for `cut_excerpt`."""
    snippet = (f"snippet(run_search, {column}, char(2), char(3), '{ELLIPSIS}', "
               f"{SNIPPET_TOKENS})")
    if long_if is None:
        return snippet
    return (f"CASE WHEN {long_if} THEN highlight(run_search, {column}, char(2), char(3)) "
            f"ELSE {snippet} END")


def cut_excerpt(marked: str) -> str:
    """A whole marked text cut to about SNIPPET_TOKENS tokens around its first match, as
    snippet() would show it (`…` where it was cut); '' when nothing in it matched."""
    at = marked.find(START)
    if at < 0:
        return ""
    before = _CHUNK.findall(marked[:at])
    if marked[:at] and not marked[at - 1].isspace() and before:
        at -= len(before.pop())  # the match starts inside a word: keep the word whole
    head = before[-BEFORE_TOKENS:] if BEFORE_TOKENS else []
    start = at - sum(map(len, head))
    tail = _CHUNK.findall(marked[at:])
    kept = tail[:SNIPPET_TOKENS - len(head)]
    text = "".join(head + kept).rstrip()
    if text.count(START) > text.count(END):
        text += END  # the window ends inside a match
    return (ELLIPSIS if start > 0 else "") + text + (ELLIPSIS if len(kept) < len(tail)
                                                      else "")


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
    for name, marked in zip(fields, snippets, strict=True):
        if marked and START in marked:
            text, matches = read_marked(marked)
            return {"field": name, "text": text, "matches": matches}
    return None
