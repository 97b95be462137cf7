"""Forward-only schema migrations, indexed by PRAGMA user_version, and how they are applied."""

from __future__ import annotations

import sqlite3

from llamon_playground.daemon.errors import UnsupportedDatabaseVersion

# MIGRATIONS[i] upgrades a database at user_version i to i + 1. Never edit a shipped entry.
MIGRATIONS: list[str] = [
    """
    CREATE TABLE sessions (
        id          TEXT PRIMARY KEY,
        title       TEXT NOT NULL DEFAULT '',
        context_id  TEXT NOT NULL,
        created_at  TEXT NOT NULL,
        metadata    TEXT NOT NULL DEFAULT '{}'
    );
    CREATE TABLE runs (
        id              TEXT PRIMARY KEY,
        session_id      TEXT NOT NULL REFERENCES sessions(id),
        status          TEXT NOT NULL,
        reason          TEXT,
        created_at      TEXT NOT NULL,
        started_at      TEXT,
        ended_at        TEXT,
        duration_ms     REAL,
        context_id      TEXT NOT NULL,
        task_id         TEXT,
        parent_run_id   TEXT REFERENCES runs(id),
        rerun_of        TEXT,
        resumed_by      TEXT,
        input           TEXT NOT NULL,
        output          TEXT NOT NULL DEFAULT '[]',
        error           TEXT,
        scores          TEXT NOT NULL DEFAULT '[]',
        generation      INTEGER,
        recommended_run_command TEXT,
        label           TEXT
    );
    CREATE INDEX runs_by_session ON runs(session_id, created_at);
    -- Backstop for the in-memory lock: at most one active run in the whole project.
    CREATE UNIQUE INDEX one_active_run ON runs((1))
        WHERE status IN ('queued', 'preparing', 'running');
    CREATE TABLE events (
        seq      INTEGER PRIMARY KEY,
        run_id   TEXT NOT NULL,
        kind     TEXT NOT NULL,
        payload  BLOB NOT NULL,
        ts       TEXT NOT NULL
    );
    CREATE INDEX events_by_run ON events(run_id, seq);
    -- Which blobs a run references: deletion keeps blobs that other runs still use.
    CREATE TABLE run_files (
        run_id  TEXT NOT NULL,
        sha256  TEXT NOT NULL,
        PRIMARY KEY (run_id, sha256)
    ) WITHOUT ROWID;
    CREATE INDEX run_files_by_sha ON run_files(sha256);
    """,
    # Names and lineage: a run's note, which input fields an edited rerun replaced (a JSON
    # list; NULL when nothing was replaced), the fingerprint of the watched files its Host
    # generation started with, and the A2A protocol version it spoke.
    """
    ALTER TABLE runs ADD COLUMN note TEXT;
    ALTER TABLE runs ADD COLUMN a2a_version TEXT;
    ALTER TABLE runs ADD COLUMN edited_fields TEXT;
    ALTER TABLE runs ADD COLUMN code_fingerprint TEXT;
    CREATE INDEX runs_by_rerun_of ON runs(rerun_of);
    """,
    # Each event's SSE frame, stored when it commits so a replay copies bytes. Rows from
    # before keep NULL: the replay query builds theirs (the same bytes) as it reads them.
    """
    ALTER TABLE events ADD COLUMN frame BLOB;
    """,
    # Each event stored once, as its frame: the frame's data: line is the event's JSON, so
    # the payload column only doubled history's size. Rows without a frame get theirs built
    # here, with the same bytes the daemon builds (a test holds the two together). Dropping
    # the column rewrites the rows in place: the file does not grow, as a copy of the table
    # would make it (by the new table's size, measured: 372 MB became 629 MB for 1M events).
    """
    UPDATE events SET frame = CAST(printf(
            'id: %d' || char(10) || 'event: %s' || char(10)
            || 'data: {"seq":%d,"run_id":"%s","kind":"%s"%s' || char(10) || char(10),
            seq, kind, seq, run_id, kind,
            CASE WHEN length(payload) = 2 THEN '}'
                 ELSE ',' || substr(CAST(payload AS TEXT), 2) END) AS BLOB)
        WHERE frame IS NULL;
    ALTER TABLE events DROP COLUMN payload;
    """,
    # Suites: named, ordered lists of cases with their inputs and baselines copied in (a
    # deleted source still runs), suite runs and each case's result in one, the blobs the
    # cases hold (kept while a case names them), and which suite run and case a run was.
    """
    CREATE TABLE suites (
        id           TEXT PRIMARY KEY,
        name         TEXT NOT NULL UNIQUE,
        created_at   TEXT NOT NULL,
        run_on_save  INTEGER NOT NULL DEFAULT 0,
        last_revision TEXT
    );
    CREATE TABLE suite_cases (
        id             TEXT PRIMARY KEY,
        suite_id       TEXT NOT NULL,
        position       INTEGER NOT NULL,
        kind           TEXT NOT NULL,
        source_run_id  TEXT,
        source_session_id TEXT,
        turns          TEXT NOT NULL,
        baseline       TEXT NOT NULL
    );
    CREATE INDEX suite_cases_by_suite ON suite_cases(suite_id, position);
    CREATE TABLE suite_files (
        case_id  TEXT NOT NULL,
        sha256   TEXT NOT NULL,
        PRIMARY KEY (case_id, sha256)
    ) WITHOUT ROWID;
    CREATE INDEX suite_files_by_sha ON suite_files(sha256);
    CREATE TABLE suite_runs (
        id               TEXT PRIMARY KEY,
        suite_id         TEXT NOT NULL,
        session_id       TEXT,
        status           TEXT NOT NULL,
        reason           TEXT,
        trigger          TEXT NOT NULL,
        created_at       TEXT NOT NULL,
        ended_at         TEXT,
        code_fingerprint TEXT
    );
    CREATE INDEX suite_runs_by_suite ON suite_runs(suite_id, created_at);
    CREATE TABLE suite_results (
        suite_run_id  TEXT NOT NULL,
        case_id       TEXT NOT NULL,
        position      INTEGER NOT NULL,
        state         TEXT NOT NULL,
        run_ids       TEXT NOT NULL DEFAULT '[]',
        result        TEXT,
        row           TEXT,
        PRIMARY KEY (suite_run_id, case_id)
    ) WITHOUT ROWID;
    ALTER TABLE runs ADD COLUMN suite_run_id TEXT;
    ALTER TABLE runs ADD COLUMN case_id TEXT;
    """,
]

SCHEMA_VERSION = len(MIGRATIONS)


def peek_user_version(path: str) -> int:
    """Read user_version without writing anything (read-only, no journal changes)."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return int(conn.execute("PRAGMA user_version").fetchone()[0])
    finally:
        conn.close()


def migrate(conn: sqlite3.Connection) -> None:
    version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    if version > SCHEMA_VERSION:
        raise UnsupportedDatabaseVersion(f"database schema version {version} is too new")
    for target in range(version, SCHEMA_VERSION):
        conn.execute("BEGIN IMMEDIATE")
        try:
            for statement in split_sql(MIGRATIONS[target]):
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {target + 1}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise


def split_sql(script: str) -> list[str]:
    """executescript() would COMMIT our transaction; run each statement ourselves instead."""
    statements: list[str] = []
    buf = ""
    for line in script.splitlines(keepends=True):
        if line.strip().startswith("--"):
            continue
        buf += line
        if sqlite3.complete_statement(buf):
            statements.append(buf.strip())
            buf = ""
    if buf.strip():
        statements.append(buf.strip())
    return statements
