"""Search history: the paged query over the FTS5 index, newest run first."""

from __future__ import annotations

import sqlite3
from typing import Any

import orjson

from llamon_playground.daemon.store.database import Store
from llamon_playground.daemon.store.history import score_summary
from llamon_playground.daemon.store.search.excerpt import (
    LONG_CHARS,
    best_excerpt,
    cut_excerpt,
    snippet_sql,
)
from llamon_playground.daemon.store.search.query import (
    ACTIVE,
    TEXT_COLUMNS,
    SearchQuery,
    invalid,
)
from llamon_playground.daemon.store.search.run_line import input_line, input_line_sql

# What a hit says of its run: the run list's fields without the parts, scores and error
# (a page of hits stays small however long the outputs are), its session's title.
HIT_COLUMNS = ("id", "session_id", "status", "reason", "created_at", "started_at",
               "ended_at", "duration_ms", "label", "note", "generation", "parent_run_id",
               "rerun_of", "resumed_by", "code_fingerprint", "a2a_version")
_SELECT = ", ".join(f"r.{c}" for c in HIT_COLUMNS) + \
    ", r.rowid AS _rowid, r.scores, r.edited_fields, s.title AS session_title, " + \
    input_line_sql("r.input")
# Input and output may be long: whole and marked then, cut in Python (excerpt.py).
_LONG = {0: f"length(r.input) > {LONG_CHARS}", 1: f"length(r.output) > {LONG_CHARS}"}
_SNIPPETS = ", ".join(f"{snippet_sql(i, _LONG.get(i))} AS x{i}"
                      for i in range(len(TEXT_COLUMNS))) + \
    ", " + ", ".join(f"{cond} AS long{i}" for i, cond in _LONG.items())
_NO_SNIPPETS = ", ".join(f"NULL AS x{i}" for i in range(len(TEXT_COLUMNS))) + \
    ", " + ", ".join(f"0 AS long{i}" for i in _LONG)
_MATCH_SQL = (
    "SELECT {select}, {snippets} FROM run_search "
    "JOIN runs AS r ON r.rowid = run_search.rowid "
    "LEFT JOIN sessions AS s ON s.id = r.session_id "
    "WHERE run_search MATCH ? AND run_search.rowid < ? {status} "
    "ORDER BY run_search.rowid DESC LIMIT ?")
_ALL_SQL = (
    "SELECT {select}, {snippets} FROM runs AS r "
    "LEFT JOIN sessions AS s ON s.id = r.session_id "
    "WHERE r.rowid < ? ORDER BY r.rowid DESC LIMIT ?")
LAST_ROWID = 2**63 - 1
FTS_ERRORS = ("fts5", "unterminated string")  # FTS5's own words for a query it can't read


class RunSearch:
    """Finds runs by their words and filters (docs/api.md, "Search")."""

    def __init__(self, store: Store) -> None:
        self._store = store

    async def search(self, query: SearchQuery, after: int, limit: int
                     ) -> tuple[list[dict[str, Any]], str | None]:
        """A page of hits, newest first, and the cursor of the next page (or None)."""
        if query.nothing:
            return [], None
        sql, params = statement(query, after, limit + 1)
        try:
            rows = await self._store.fetch_all(sql, params)
        except sqlite3.OperationalError as exc:
            # Words are quoted, so this is not expected; still the asker's query, not a 500.
            if not any(word in str(exc) for word in FTS_ERRORS):
                raise
            raise invalid(f"the query cannot be searched: {exc}") from exc
        more = len(rows) > limit
        rows = rows[:limit]
        cursor = str(rows[-1]["_rowid"]) if more and rows else None
        return [hit(row) for row in rows], cursor


def statement(query: SearchQuery, after: int, rows: int) -> tuple[str, tuple[Any, ...]]:
    """The SQL and parameters that read `rows` hits after cursor `after` (0: the newest)."""
    bound = after or LAST_ROWID
    match = query.match()
    if match is None:
        return _ALL_SQL.format(select=_SELECT, snippets=_NO_SNIPPETS), (bound, rows)
    snippets = _SNIPPETS if query.terms else _NO_SNIPPETS
    status = ""
    statuses: tuple[str, ...] = ()
    if any(s in ACTIVE for s in query.statuses):
        status = f"AND r.status IN ({', '.join('?' for _ in query.statuses)})"
        statuses = query.statuses
    sql = _MATCH_SQL.format(select=_SELECT, snippets=snippets, status=status)
    return sql, (match, bound, *statuses, rows)


def hit(row: sqlite3.Row) -> dict[str, Any]:
    doc: dict[str, Any] = {c: row[c] for c in HIT_COLUMNS}
    doc["session_title"] = row["session_title"] or ""
    doc["input_excerpt"] = input_line(row)
    doc["score_summary"] = score_summary(orjson.loads(row["scores"] or "[]"))
    edited = orjson.loads(row["edited_fields"]) if row["edited_fields"] else []
    doc["edited_fields"] = edited
    doc["edited"] = bool(edited)
    snippets = [row[f"x{i}"] for i in range(len(TEXT_COLUMNS))]
    for i in _LONG:
        if row[f"long{i}"] and snippets[i] is not None:
            snippets[i] = cut_excerpt(snippets[i])
    doc["excerpt"] = best_excerpt(TEXT_COLUMNS, snippets)
    return doc
