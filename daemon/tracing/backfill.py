"""Stored runs sent to the collector on demand (`llamon-playground export-traces`): a suite
run's, an imported bundle's, or everything since a time.

Read from the project's database on a read-only connection of its own (the daemon may be
running and writing), one run at a time, and built into spans by the same function the
live export uses, with the same ids: a run exported twice lands on the same trace.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from llamon_playground.common.contract import ACTIVE_STATUSES
from llamon_playground.daemon.store.frames import stored_events
from llamon_playground.daemon.store.history import run_to_dict
from llamon_playground.daemon.tracing.recorder import KEPT_KINDS, MAX_RUN_EVENTS, slim_event
from llamon_playground.daemon.tracing.spans import RunTraceInput, run_spans, suite_span

if TYPE_CHECKING:
    from llamon_playground.daemon.tracing.sdk import SpanSink

ACTIVE = tuple(sorted(status.value for status in ACTIVE_STATUSES))


class BadSince(ValueError):
    """`--since` is not an ISO date or time."""


def since_stamp(value: str) -> str:
    """`2026-12-04` or `2026-12-04T13:00[:00][Z|+01:00]` as history stores times (UTC)."""
    try:
        when = datetime.fromisoformat(value.strip())
    except ValueError as exc:
        raise BadSince(f"--since {value!r} is not an ISO date or time") from exc
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass
class Backfilled:
    """What a back-fill handed to the exporter."""

    runs: int = 0
    suite_runs: int = 0
    spans: int = 0
    refused: int = 0  # runs the exporter's queue had no room for


def _runs(conn: sqlite3.Connection, session: str | None, since: str | None
          ) -> Iterator[sqlite3.Row]:
    sql = f"SELECT * FROM runs WHERE status NOT IN ({', '.join('?' * len(ACTIVE))})"
    params: list[Any] = list(ACTIVE)
    if session is not None:
        sql += " AND session_id = ?"
        params.append(session)
    if since is not None:
        sql += " AND created_at >= ?"
        params.append(since)
    yield from conn.execute(sql + " ORDER BY created_at, id", params)


def backfill(db_path: Path, sink: SpanSink, agent_name: str, *, session: str | None = None,
             since: str | None = None, capture_content: bool = False) -> Backfilled:
    """Hand every finished run selected (and the suite runs they belong to) to `sink`."""
    done = Backfilled()
    conn = sqlite3.connect(f"{db_path.as_uri()}?mode=ro", uri=True, isolation_level=None)
    conn.row_factory = sqlite3.Row
    suites: set[str] = set()
    try:
        for row in list(_runs(conn, session, since)):
            run = run_to_dict(row)
            conn.execute("BEGIN")  # its blocks and rows read as one snapshot
            try:
                events = [slim_event(kind, ts, frame)
                          for _, _, kind, ts, frame in stored_events(conn, [run["id"]])
                          if kind in KEPT_KINDS][:MAX_RUN_EVENTS]
            finally:
                conn.execute("COMMIT")
            linked = {other: _suite_of(conn, other)
                      for other in (run.get("parent_run_id"), run.get("rerun_of")) if other}
            spans = run_spans(RunTraceInput(run, events, agent_name, linked),
                              capture_content=capture_content)
            if sink.emit(spans):
                done.runs += 1
                done.spans += len(spans)
            else:
                done.refused += 1
            if run.get("suite_run_id"):
                suites.add(run["suite_run_id"])
        for suite_run_id in sorted(suites):
            found = conn.execute("SELECT r.*, s.name AS suite_name FROM suite_runs r "
                                 "LEFT JOIN suites s ON s.id = r.suite_id WHERE r.id = ?",
                                 (suite_run_id,)).fetchone()
            if found is not None and found["status"] not in ACTIVE:
                doc = dict(found)
                if sink.emit([suite_span(doc, doc.get("suite_name") or doc["suite_id"])]):
                    done.suite_runs += 1
                    done.spans += 1
    finally:
        conn.close()
    return done


def _suite_of(conn: sqlite3.Connection, run_id: str) -> str | None:
    row = conn.execute("SELECT suite_run_id FROM runs WHERE id = ?", (run_id,)).fetchone()
    return row[0] if row else None
