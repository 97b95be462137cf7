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
    # Finished runs kept compact: their events before the terminal run.status move into
    # zstandard blocks (daemon/store/frames.py), in the background and a few at a time
    # (daemon/store/upkeep/compaction.py); `upkeep` keeps how far that sweep got, so it resumes
    # after a kill. A run's blocks go with its row, whoever deletes it.
    """
    CREATE TABLE event_blocks (
        run_id     TEXT NOT NULL,
        first_seq  INTEGER NOT NULL,
        last_seq   INTEGER NOT NULL,
        events     INTEGER NOT NULL,
        terminal   INTEGER NOT NULL,
        frames     BLOB NOT NULL,
        stamps     BLOB NOT NULL
    );
    CREATE UNIQUE INDEX event_blocks_by_run ON event_blocks(run_id, last_seq);
    CREATE TABLE upkeep (
        key    TEXT PRIMARY KEY,
        value  INTEGER NOT NULL
    ) WITHOUT ROWID;
    CREATE TRIGGER run_blocks_go_with_run AFTER DELETE ON runs BEGIN
        DELETE FROM event_blocks WHERE run_id = old.id;
    END;
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
