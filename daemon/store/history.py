"""Sessions and runs as rows: the queries the routes and the run lifecycle need (the SQL that
cuts a list's excerpts is daemon/store/excerpts.py)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

import orjson

from llamon_playground.common.contract import API_PREFIX
from llamon_playground.common.ids import new_context_id, new_session_id
from llamon_playground.daemon.data.compare import latest_scores
from llamon_playground.daemon.errors import NotFound
from llamon_playground.daemon.store.database import Store
from llamon_playground.daemon.store.excerpts import (
    LAST_ACTIVITY,
    RUN_DETAIL,
    SESSION_LIST_COLUMNS,
    run_list_columns,
)
from llamon_playground.daemon.store.records import utcnow

RUN_JSON_COLUMNS = ("input", "output", "error", "scores", "edited_fields")
# Boot recovery's mark in `upkeep` (daemon/runs/reconcile.py): the runs up to this rowid
# were checked when a boot last finished recovery.
RECOVERED_MARK = "recovered_through_run_rowid"
# The compactor's (daemon/store/upkeep/compaction.py): the runs up to this rowid are blocks.
COMPACTED_MARK = "compacted_through_run_rowid"


def runs_deleted(conn: sqlite3.Connection) -> None:
    """After runs are deleted: the marks that name a run's rowid come down to the largest
    rowid left. SQLite numbers the next run the largest rowid plus one, so once the newest
    runs are gone it gives their rowids out again; above the marks, a new run is compacted
    and checked at boot like any other (after "delete all", none ever was)."""
    conn.execute("UPDATE upkeep SET value = min(value, (SELECT coalesce(max(rowid), 0) "
                 "FROM runs)) WHERE key IN (?, ?)", (RECOVERED_MARK, COMPACTED_MARK))


def recheck_next_runs(conn: sqlite3.Connection) -> None:
    """Before rows are added to `runs` that boot recovery must check (an import's): lower
    its mark below them. They take rowids after the largest now, which may be at or below
    the mark when the newest runs were deleted."""
    conn.execute("UPDATE upkeep SET value = min(value, (SELECT coalesce(max(rowid), 0) "
                 "FROM runs)) WHERE key = ?", (RECOVERED_MARK,))


def session_to_dict(row: sqlite3.Row) -> dict[str, Any]:
    return {"id": row["id"], "title": row["title"], "context_id": row["context_id"],
            "created_at": row["created_at"], "metadata": orjson.loads(row["metadata"])}


def score_summary(scores: list[dict[str, Any]]) -> dict[str, int]:
    """Each evaluator once, its latest entry deciding (as compare counts them)."""
    latest = latest_scores(scores).values()
    failed = sum(1 for s in latest if str(s.get("passStatus", "")).lower() in ("fail", "failed"))
    return {"evaluators": len(latest), "failed": failed}


def run_to_dict(row: sqlite3.Row) -> dict[str, Any]:
    """A run row as the API answers it: JSON columns decoded, score summary and edit marks added."""
    # sqlite3.Row iterates over its values, not its keys.
    doc: dict[str, Any] = {key: row[key] for key in row.keys() if key != "_rowid"}  # noqa: SIM118
    for key in RUN_JSON_COLUMNS:
        doc[key] = orjson.loads(doc[key]) if doc[key] is not None else None
    doc["score_summary"] = score_summary(doc["scores"] or [])
    doc["edited_fields"] = doc.get("edited_fields") or []
    doc["edited"] = bool(doc["edited_fields"])
    return doc


async def create_session(store: Store, title: str, metadata: dict[str, Any]) -> dict[str, Any]:
    session_id = new_session_id()
    row = {"id": session_id, "title": title, "context_id": new_context_id(),
           "created_at": utcnow(), "metadata": orjson.dumps(metadata).decode()}

    def op(conn: sqlite3.Connection) -> None:
        conn.execute(
            "INSERT INTO sessions (id, title, context_id, created_at, metadata) "
            "VALUES (:id, :title, :context_id, :created_at, :metadata)", row)
    await store.write(op)
    return {**row, "metadata": metadata}


async def update_session(store: Store, session_id: str,
                         fields: dict[str, Any]) -> dict[str, Any] | None:
    """Apply `fields` (title, metadata) to a session; the session after, or None if none."""
    values = {k: orjson.dumps(v).decode() if k == "metadata" else v for k, v in fields.items()}

    def op(conn: sqlite3.Connection) -> bool:
        if values:
            sets = ", ".join(f"{k} = :{k}" for k in values)
            cursor = conn.execute(f"UPDATE sessions SET {sets} WHERE id = :_id",
                                  {**values, "_id": session_id})
            return cursor.rowcount > 0
        return conn.execute("SELECT 1 FROM sessions WHERE id = ?",
                            (session_id,)).fetchone() is not None
    if not await store.write(op):
        return None
    return await get_session(store, session_id)


async def update_run_fields(store: Store, run_id: str,
                            fields: dict[str, Any]) -> dict[str, Any] | None:
    """Apply a run's own fields (label, note; never its status or output); the run after,
    or None if there is no such run."""
    def op(conn: sqlite3.Connection) -> bool:
        if conn.execute("SELECT 1 FROM runs WHERE id = ?", (run_id,)).fetchone() is None:
            return False
        if fields:
            run_update_op(run_id, fields)(conn)
        return True
    if not await store.write(op):
        return None
    return await run_view(store, run_id)


Page = tuple[list[dict[str, Any]], str | None]  # items, cursor of the next page (or None)


def _page(rows: list[sqlite3.Row], limit: int) -> tuple[list[sqlite3.Row], str | None]:
    """Keyset paging by rowid (insertion order: immune to clock jumps); one extra row tells
    whether another page follows."""
    more = len(rows) > limit
    rows = rows[:limit]
    return rows, str(rows[-1]["_rowid"]) if more and rows else None


async def list_sessions(store: Store, after: int = 0, limit: int = 100,
                        newest_first: bool = False) -> Page:
    """Sessions, oldest first; `newest_first` pages backwards (the page shows the newest
    sessions and reads older ones only when asked: a year of history is thousands)."""
    where, order, bound = ("<", "DESC", after or 2**63 - 1) if newest_first else (">", "", after)
    rows, cursor = _page(await store.fetch_all(
        f"SELECT {SESSION_LIST_COLUMNS}, {LAST_ACTIVITY}, "
        "(SELECT COUNT(*) FROM runs r WHERE r.session_id = s.id) AS run_count "
        f"FROM sessions s WHERE s.rowid {where} ? ORDER BY s.rowid {order} LIMIT ?",
        (bound, limit + 1)), limit)
    return [{**session_to_dict(r), "run_count": r["run_count"],
             "last_activity_at": r["last_activity_at"],
             "metadata_truncated": bool(r["metadata_truncated"])} for r in rows], cursor


async def get_session(store: Store, session_id: str) -> dict[str, Any] | None:
    """A session with its last activity, or None."""
    row = await store.fetch_one(f"SELECT s.*, {LAST_ACTIVITY} FROM sessions s WHERE id = ?",
                                (session_id,))
    return {**session_to_dict(row), "last_activity_at": row["last_activity_at"]} if row else None


async def get_run(store: Store, run_id: str) -> dict[str, Any] | None:
    """A run's row whole (what a rerun copies): never an API answer, see run_view."""
    row = await store.fetch_one("SELECT * FROM runs WHERE id = ?", (run_id,))
    return run_to_dict(row) if row else None


async def run_view(store: Store, run_id: str) -> dict[str, Any] | None:
    """A run as `GET /runs/{id}` answers it: its long parts cut in SQL (RUN_DETAIL), so the
    answer is bounded whatever the run's output; each cut part links to its whole."""
    select = run_list_columns([row[0] for row in await store.fetch_all(
        "SELECT name FROM pragma_table_info('runs')")], RUN_DETAIL)
    row = await store.fetch_one(f"SELECT {select} FROM runs WHERE id = ?", (run_id,))
    return with_content_urls(run_to_dict(row)) if row else None


async def stored_part(store: Store, run_id: str, side: str, index: int) -> dict[str, Any]:
    """One stored part of a run's input or output, as history keeps it (a long text: its
    excerpt and blob). NotFound run_not_found / part_not_found."""
    path = f"$.parts[{index}]" if side == "input" else f"$[{index}]"
    column = "input" if side == "input" else "output"
    row = await store.fetch_one(
        f"SELECT json_extract({column}, ?) AS part FROM runs WHERE id = ?", (path, run_id))
    if row is None:
        raise NotFound(f"no run {run_id}", code="run_not_found")
    part = orjson.loads(row["part"]) if isinstance(row["part"], str) else None
    if not isinstance(part, dict):
        raise NotFound(f"run {run_id} has no {side} part {index}", code="part_not_found")
    return part


def with_content_urls(run: dict[str, Any]) -> dict[str, Any]:
    """Each cut part of a run answer with `content_url`: the route that streams it whole."""
    for side, parts in (("input", (run.get("input") or {}).get("parts") or []),
                        ("output", run.get("output") or [])):
        for index, part in enumerate(parts):
            if isinstance(part, dict) and part.get("truncated"):
                part["content_url"] = part_content_path(run["id"], side, index)
    return run


def output_event_parts(run_id: str, parts: list[Any]) -> list[Any]:
    """A run's stored output as its `run.output` event carries it: as `GET /runs/{id}`
    answers it, each cut part naming where its whole is served (this run's route; any
    other `content_url` a part brings is dropped)."""
    out: list[Any] = []
    for index, part in enumerate(parts):
        if isinstance(part, dict) and (part.get("truncated") or "content_url" in part):
            served = {k: v for k, v in part.items() if k != "content_url"}
            if served.get("truncated"):
                served["content_url"] = part_content_path(run_id, "output", index)
            out.append(served)
        else:
            out.append(part)
    return out


def part_content_path(run_id: str, side: str, index: int) -> str:
    """Where a run's part is served whole (`GET`, with Range): daemon/http/data.py."""
    return f"{API_PREFIX}/runs/{run_id}/{side}/{index}/content"


async def list_runs(store: Store, session_id: str, after: int = 0, limit: int = 100,
                    newest_first: bool = False) -> Page:
    """A session's runs, oldest first; `newest_first` pages backwards (a history view shows
    the newest run on top and reads older pages only when they are scrolled to). `after` is
    the previous page's cursor either way; 0 starts at the first (or the newest) run."""
    # Excerpts, never whole outputs (below): every column by name but those.
    select = run_list_columns([row[0] for row in await store.fetch_all(
        "SELECT name FROM pragma_table_info('runs')")])
    if newest_first:
        sql = (f"SELECT {select} FROM runs WHERE session_id = ? AND rowid < ? "
               "ORDER BY rowid DESC LIMIT ?")
        bound = after or 2**63 - 1
    else:
        sql = (f"SELECT {select} FROM runs WHERE session_id = ? AND rowid > ? "
               "ORDER BY rowid LIMIT ?")
        bound = after
    rows, cursor = _page(await store.fetch_all(sql, (session_id, bound, limit + 1)), limit)
    return [with_content_urls(run_to_dict(r)) for r in rows], cursor


async def insert_run(store: Store, run: dict[str, Any], file_shas: list[str],
                     resumed_parent: str | None = None,
                     events: list[tuple[str, str, dict[str, Any]]] | None = None) -> str:
    """Insert a run's row (and the `events` it starts with) in one transaction, one hand-off
    to the writer; the run's context id (see run_insert_op)."""
    op = run_insert_op(run, file_shas, resumed_parent)
    if events:
        return await store.write_with_events(op, events, durable=False)
    return await store.write(op)


def run_insert_op(run: dict[str, Any], file_shas: list[str],
                  resumed_parent: str | None = None) -> Callable[[sqlite3.Connection], str]:
    """The write op that inserts a run's row; it returns the run's context id, its
    session's when `run` gives none. The session is looked up inside the transaction, not
    read before it: NotFound (session_not_found) when there is none, and nothing is
    written."""
    values = dict(run)
    values.setdefault("context_id", None)
    for key in RUN_JSON_COLUMNS:
        if key in values and values[key] is not None:
            values[key] = orjson.dumps(values[key]).decode()
    columns = ", ".join(values)
    picks = ", ".join("COALESCE(:context_id, s.context_id)" if k == "context_id" else f":{k}"
                      for k in values)
    sql = (f"INSERT INTO runs ({columns}) SELECT {picks} FROM sessions s "
           "WHERE s.id = :session_id RETURNING context_id")

    def op(conn: sqlite3.Connection) -> str:
        inserted = conn.execute(sql, values).fetchone()
        if inserted is None:
            raise NotFound(f"no session {run['session_id']}", code="session_not_found")
        if file_shas:
            conn.executemany("INSERT OR IGNORE INTO run_files (run_id, sha256) VALUES (?, ?)",
                             [(run["id"], sha) for sha in file_shas])
        if resumed_parent is not None:
            # Same transaction as the child: a parent is resumed at most once.
            conn.execute("UPDATE runs SET resumed_by = ? WHERE id = ?",
                         (run["id"], resumed_parent))
        return str(inserted[0])
    return op


async def update_run(store: Store, run_id: str, changes: dict[str, Any],
                     file_shas: list[str] | None = None) -> None:
    await store.write(run_update_op(run_id, changes, file_shas))


def run_update_op(run_id: str, changes: dict[str, Any],
                  file_shas: list[str] | None = None) -> Callable[[sqlite3.Connection], None]:
    """The write op that applies `changes` to a run row (for store.write or store.submit)."""
    values = dict(changes)
    for key in RUN_JSON_COLUMNS:
        if key in values and values[key] is not None:
            values[key] = orjson.dumps(values[key]).decode()
    sets = ", ".join(f"{k} = :{k}" for k in values)
    values["_id"] = run_id

    def op(conn: sqlite3.Connection) -> None:
        conn.execute(f"UPDATE runs SET {sets} WHERE id = :_id", values)
        if file_shas:
            conn.executemany(
                "INSERT OR IGNORE INTO run_files (run_id, sha256) VALUES (?, ?)",
                [(run_id, sha) for sha in file_shas])
    return op


async def delete_session(store: Store, session_id: str) -> list[str]:
    """Delete a session, its runs and events; return blobs no remaining run references."""
    def op(conn: sqlite3.Connection) -> list[str]:
        run_ids = [r[0] for r in conn.execute(
            "SELECT id FROM runs WHERE session_id = ?", (session_id,)).fetchall()]
        shas: set[str] = set()
        for run_id in run_ids:
            shas.update(r[0] for r in conn.execute(
                "SELECT sha256 FROM run_files WHERE run_id = ?", (run_id,)).fetchall())
            conn.execute("DELETE FROM events WHERE run_id = ?", (run_id,))
            conn.execute("DELETE FROM run_files WHERE run_id = ?", (run_id,))
        conn.execute("UPDATE runs SET parent_run_id = NULL WHERE session_id = ?", (session_id,))
        conn.execute("DELETE FROM runs WHERE session_id = ?", (session_id,))
        conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,))
        runs_deleted(conn)
        orphans = []
        for sha in shas:
            used = conn.execute(
                "SELECT 1 FROM run_files WHERE sha256 = ? LIMIT 1", (sha,)).fetchall()
            if not used:
                orphans.append(sha)
        return orphans
    return await store.write(op)


def scores_op(run_id: str, entries: list[dict[str, Any]]
              ) -> Callable[[sqlite3.Connection], None]:
    """The write op that appends evaluator results to the run's scores (the list only
    grows); submitted, so it is retried in order with the run's events during an outage."""
    def op(conn: sqlite3.Connection) -> None:
        for entry in entries:
            conn.execute("UPDATE runs SET scores = json_insert(scores, '$[#]', json(?)) "
                         "WHERE id = ?", (orjson.dumps(entry).decode(), run_id))
    return op


async def unreferenced(store: Store, shas: list[str]) -> list[str]:
    """Those of `shas` that no run and no suite case references (re-checked just before
    unlinking blobs)."""
    left = []
    for sha in shas:
        if await store.fetch_one("SELECT 1 FROM run_files WHERE sha256 = ? UNION ALL "
                                 "SELECT 1 FROM suite_files WHERE sha256 = ? LIMIT 1",
                                 (sha, sha)) is None:
            left.append(sha)
    return left


async def find_file_part(store: Store, sha256: str) -> dict[str, Any] | None:
    """The stored file part of the newest run that references blob `sha256` (name, MIME)."""
    rows = await store.fetch_all(
        "SELECT r.input, r.output FROM run_files f JOIN runs r ON r.id = f.run_id "
        "WHERE f.sha256 = ? ORDER BY r.created_at DESC, r.rowid DESC LIMIT 20", (sha256,))
    for row in rows:
        parts = [*orjson.loads(row["input"]).get("parts", []), *orjson.loads(row["output"])]
        for part in parts:
            if isinstance(part, dict) and part.get("kind") == "file" and \
                    part.get("sha256") == sha256:
                return part
    return None
