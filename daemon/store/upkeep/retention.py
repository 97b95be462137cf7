"""The retention policy: the most history to keep, by size and by age; off by default.

When history is over either limit, whole sessions go, oldest first (insertion order), each
in its own small write transaction that checks again, inside it, that the session may go:

- a session with a labelled run is kept (a label is how a person says "keep this");
- a session with a run in a suite (a suite run's case, a case's baseline) is kept;
- a session with the active run (queued, preparing, running) is kept;
- a session created, or with a run created, within the last day is kept.

A removed session takes its runs, their events and blocks and the blobs no remaining run
references (unlinked after the commit, as deletion does). The freed pages go back to the
filesystem by incremental vacuum, a step per write (`daemon/store/removal/space.py`).
"""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from llamon_playground.common.config import Settings
from llamon_playground.common.contract import ACTIVE_STATUSES
from llamon_playground.daemon.store.history import runs_deleted
from llamon_playground.daemon.store.removal.space import used_bytes

KEEP_NEWER_THAN = timedelta(days=1)
ACTIVE_SQL = "(" + ", ".join(f"'{s.value}'" for s in sorted(ACTIVE_STATUSES)) + ")"
# A session is kept when any of these holds (`?` is the "newer than a day" cut-off).
KEPT_SQL = f"""(s.created_at >= :recent OR EXISTS (
    SELECT 1 FROM runs r WHERE r.session_id = s.id AND (
        COALESCE(r.label, '') != '' OR r.status IN {ACTIVE_SQL} OR r.created_at >= :recent)))"""
IN_SUITE_SQL = """
SELECT 1 FROM runs WHERE session_id = :id AND suite_run_id IS NOT NULL
UNION ALL
SELECT 1 FROM suite_cases AS c, json_each(c.baseline, '$.run_ids') AS b
  JOIN runs AS r ON r.id = b.value
 WHERE r.session_id = :id
LIMIT 1"""
LAST_ACTIVITY_SQL = """max(s.created_at, COALESCE(
    (SELECT max(r.created_at) FROM runs r WHERE r.session_id = s.id), ''))"""


@dataclass(frozen=True)
class Policy:
    """The limits history is kept under (the settings' HISTORY_MAX_BYTES and _MAX_AGE_DAYS)."""

    max_bytes: int = 0  # 0: no size limit
    max_age_days: float = 0.0  # 0: no age limit

    @classmethod
    def of(cls, settings: Settings) -> Policy:
        return cls(settings.history_max_bytes, settings.history_max_age_days)

    @property
    def on(self) -> bool:
        return self.max_bytes > 0 or self.max_age_days > 0

    def as_dict(self) -> dict[str, Any]:
        return {"max_bytes": self.max_bytes or None,
                "max_age_days": self.max_age_days or None}


def in_suite(conn: sqlite3.Connection, session_id: str) -> bool:
    """Whether a run of this session is a suite run's case or a suite case's baseline: the
    policy keeps those, a suite's report reads them (one query, inside the trim's
    transaction; a suite case's own inputs are copied, so only these runs are needed)."""
    return conn.execute(IN_SUITE_SQL, {"id": session_id}).fetchone() is not None


def iso(moment: datetime) -> str:
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def files_bytes(files_dir: Path) -> int:
    total = 0
    try:
        with os.scandir(files_dir) as entries:
            for entry in entries:
                if entry.is_file(follow_symlinks=False):
                    total += entry.stat(follow_symlinks=False).st_size
    except FileNotFoundError:
        pass
    return total


def database_bytes(db_path: Path) -> int:
    """The database on disk: the file and its WAL."""
    total = 0
    for path in (db_path, db_path.with_name(db_path.name + "-wal")):
        try:
            total += path.stat().st_size
        except FileNotFoundError:
            pass
    return total


@dataclass
class Plan:
    """What the policy would remove now: sessions, oldest first, with what they hold."""

    sessions: list[dict[str, Any]] = field(default_factory=list)
    used_bytes: int = 0  # history in use now: database pages in use plus files

    @property
    def runs(self) -> int:
        return sum(int(s["runs"]) for s in self.sessions)

    @property
    def bytes(self) -> int:
        return sum(int(s["bytes"]) for s in self.sessions)

    def as_dict(self) -> dict[str, Any]:
        return {"sessions": [s["id"] for s in self.sessions], "runs": self.runs,
                "bytes": self.bytes, "used_bytes": self.used_bytes}


def session_bytes(conn: sqlite3.Connection, session_id: str) -> tuple[int, int]:
    """(runs, about how many bytes the session holds): its rows, events, blocks and the
    blobs only its runs reference."""
    runs, rows = conn.execute(
        "SELECT COUNT(*), COALESCE(sum(length(input) + length(output) + length(scores) "
        "+ COALESCE(length(error), 0)), 0) FROM runs WHERE session_id = ?",
        (session_id,)).fetchone()
    events = conn.execute(
        "SELECT COALESCE(sum(length(frame) + length(ts) + 40), 0) FROM events "
        "WHERE run_id IN (SELECT id FROM runs WHERE session_id = ?)", (session_id,)).fetchone()[0]
    blocks = conn.execute(
        "SELECT COALESCE(sum(length(frames) + length(stamps) + 60), 0) FROM event_blocks "
        "WHERE run_id IN (SELECT id FROM runs WHERE session_id = ?)", (session_id,)).fetchone()[0]
    return int(runs), int(rows) + int(events) + int(blocks)


def plan(conn: sqlite3.Connection, policy: Policy, files_dir: Path,
         now: datetime | None = None) -> Plan:
    """The sessions the policy would remove (read only; in one read transaction)."""
    now = now or datetime.now(UTC)
    found = Plan(used_bytes=used_bytes(conn) + files_bytes(files_dir))
    if not policy.on:
        return found
    old = iso(now - timedelta(days=policy.max_age_days)) if policy.max_age_days else ""
    left = found.used_bytes
    for rowid, session_id, last in conn.execute(
            f"SELECT s.rowid, s.id, {LAST_ACTIVITY_SQL} FROM sessions s "
            f"WHERE NOT {KEPT_SQL} ORDER BY s.rowid",
            {"recent": iso(now - KEEP_NEWER_THAN)}).fetchall():
        too_old = bool(old) and last < old
        too_big = policy.max_bytes > 0 and left > policy.max_bytes
        if not (too_old or too_big) or in_suite(conn, session_id):
            continue
        runs, size = session_bytes(conn, session_id)
        found.sessions.append({"id": session_id, "rowid": rowid, "runs": runs, "bytes": size,
                               "last_activity": last})
        left -= size
    return found


def remove_session(conn: sqlite3.Connection, session_id: str, recent: str) -> list[str] | None:
    """Remove one session if the policy still lets it go (checked in this transaction):
    the blobs its runs referenced that no remaining run does, or None when it was kept."""
    kept = conn.execute(f"SELECT {KEPT_SQL} FROM sessions s WHERE s.id = :id",
                        {"recent": recent, "id": session_id}).fetchone()
    if kept is None or kept[0] or in_suite(conn, session_id):
        return None
    run_ids = [r[0] for r in conn.execute("SELECT id FROM runs WHERE session_id = ?",
                                          (session_id,))]
    shas: set[str] = set()
    for run_id in run_ids:
        shas.update(r[0] for r in conn.execute(
            "SELECT sha256 FROM run_files WHERE run_id = ?", (run_id,)))
        conn.execute("DELETE FROM events WHERE run_id = ?", (run_id,))
        conn.execute("DELETE FROM run_files WHERE run_id = ?", (run_id,))
    # A run of another session resumed from one of these keeps its row, not the link.
    conn.execute("UPDATE runs SET parent_run_id = NULL WHERE parent_run_id IN "
                 "(SELECT id FROM runs WHERE session_id = ?)", (session_id,))
    conn.execute("DELETE FROM runs WHERE session_id = ?", (session_id,))  # blocks: trigger
    conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,))
    runs_deleted(conn)
    return [sha for sha in shas if conn.execute(
        "SELECT 1 FROM run_files WHERE sha256 = ? UNION ALL "
        "SELECT 1 FROM suite_files WHERE sha256 = ? LIMIT 1", (sha, sha)).fetchone() is None]

