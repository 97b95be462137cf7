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
    # Full-text search over history (docs/storage.md, "Search"). `run_search` is an FTS5
    # table of each run's words: the text of its input and output parts (data parts as
    # their keys and values, files by name, an error by its message), its label and note,
    # its session's title, and in `facts` its filters as words nobody types (status,
    # reason, label present, an evaluator failed, session). The view says how a row
    # becomes those words; triggers keep the index in step inside whatever transaction
    # changes a run or a session's title. `prefix='3'`: a prefix search (`tik*`) reads one
    # list, not every word it expands to. The three active statuses are one word, so a run's
    # start (queued, preparing, running) does not re-index its input three times; the one
    # active run is told apart by its row. The last statement indexes existing history.
    """
    CREATE VIEW run_search_doc AS SELECT
        r.rowid AS run_rowid,
        r.session_id AS session_id,
        replace(replace(coalesce((SELECT group_concat(t, ' ') FROM (
            SELECT CASE json_extract(p.value, '$.kind')
                       WHEN 'text' THEN json_extract(p.value, '$.text')
                       WHEN 'file' THEN json_extract(p.value, '$.name') END AS t
              FROM json_each(r.input, '$.parts') AS p
            UNION ALL
            SELECT CASE WHEN typeof(d.key) = 'text' THEN d.key || ' ' ELSE '' END
                   || coalesce(d.atom, '')
              FROM json_each(r.input, '$.parts') AS p, json_tree(p.value, '$.data') AS d
             WHERE json_extract(p.value, '$.kind') = 'data'
               AND d.type NOT IN ('object', 'array'))), ''), char(2), ''), char(3), '')
            AS input,
        replace(replace(coalesce((SELECT group_concat(t, ' ') FROM (
            SELECT CASE json_extract(p.value, '$.kind')
                       WHEN 'text' THEN json_extract(p.value, '$.text')
                       WHEN 'file' THEN json_extract(p.value, '$.name')
                       WHEN 'error' THEN json_extract(p.value, '$.message') END AS t
              FROM json_each(r.output) AS p
            UNION ALL
            SELECT CASE WHEN typeof(d.key) = 'text' THEN d.key || ' ' ELSE '' END
                   || coalesce(d.atom, '')
              FROM json_each(r.output) AS p, json_tree(p.value, '$.data') AS d
             WHERE json_extract(p.value, '$.kind') = 'data'
               AND d.type NOT IN ('object', 'array'))), ''), char(2), ''), char(3), '')
            AS output,
        replace(replace(coalesce(r.label, ''), char(2), ''), char(3), '') AS label,
        replace(replace(coalesce(r.note, ''), char(2), ''), char(3), '') AS note,
        replace(replace(coalesce(s.title, ''), char(2), ''), char(3), '') AS title,
        'run s' || CASE WHEN r.status IN ('queued', 'preparing', 'running') THEN 'active'
                        ELSE hex(r.status) END
            || CASE WHEN r.reason IS NULL THEN '' ELSE ' r' || hex(r.reason) END
            || CASE WHEN coalesce(r.label, '') = '' THEN '' ELSE ' labelled' END
            || CASE WHEN EXISTS (
                   SELECT 1 FROM json_each(r.scores) AS a
                    WHERE a.type = 'object'
                      AND lower(json_extract(a.value, '$.passStatus')) IN ('fail', 'failed')
                      AND NOT EXISTS (
                          SELECT 1 FROM json_each(r.scores) AS b
                           WHERE b.type = 'object' AND b.key > a.key
                             AND (CASE WHEN json_type(b.value, '$.evaluator') IS NULL
                                       THEN json_extract(b.value, '$.name')
                                       ELSE json_extract(b.value, '$.evaluator') END)
                              IS (CASE WHEN json_type(a.value, '$.evaluator') IS NULL
                                       THEN json_extract(a.value, '$.name')
                                       ELSE json_extract(a.value, '$.evaluator') END)
                             AND json_extract(b.value, '$.scope')
                              IS json_extract(a.value, '$.scope')
                             AND json_extract(b.value, '$.node')
                              IS json_extract(a.value, '$.node')))
                   THEN ' evalfailed' ELSE '' END
            || ' x' || hex(r.session_id) AS facts
      FROM runs AS r LEFT JOIN sessions AS s ON s.id = r.session_id;
    CREATE VIRTUAL TABLE run_search USING fts5(
        input, output, label, note, title, facts,
        columnsize=0, prefix='3', tokenize='unicode61 remove_diacritics 2');
    CREATE TRIGGER run_search_insert AFTER INSERT ON runs BEGIN
        INSERT INTO run_search (rowid, input, output, label, note, title, facts)
        SELECT run_rowid, input, output, label, note, title, facts
          FROM run_search_doc WHERE run_rowid = new.rowid;
    END;
    CREATE TRIGGER run_search_delete AFTER DELETE ON runs BEGIN
        DELETE FROM run_search WHERE rowid = old.rowid;
    END;
    CREATE TRIGGER run_search_update
        AFTER UPDATE OF input, output, label, note, status, reason, scores, session_id
        ON runs
        WHEN old.input IS NOT new.input OR old.output IS NOT new.output
          OR old.label IS NOT new.label OR old.note IS NOT new.note
          OR (old.status IS NOT new.status AND NOT (
                 old.status IN ('queued', 'preparing', 'running')
                 AND new.status IN ('queued', 'preparing', 'running')))
          OR old.reason IS NOT new.reason
          OR old.scores IS NOT new.scores OR old.session_id IS NOT new.session_id
    BEGIN
        DELETE FROM run_search WHERE rowid = old.rowid;
        INSERT INTO run_search (rowid, input, output, label, note, title, facts)
        SELECT run_rowid, input, output, label, note, title, facts
          FROM run_search_doc WHERE run_rowid = new.rowid;
    END;
    CREATE TRIGGER run_search_title AFTER UPDATE OF title ON sessions
        WHEN old.title IS NOT new.title
    BEGIN
        DELETE FROM run_search
         WHERE rowid IN (SELECT rowid FROM runs WHERE session_id = new.id);
        INSERT INTO run_search (rowid, input, output, label, note, title, facts)
        SELECT run_rowid, input, output, label, note, title, facts
          FROM run_search_doc WHERE session_id = new.id;
    END;
    INSERT INTO run_search (rowid, input, output, label, note, title, facts)
    SELECT run_rowid, input, output, label, note, title, facts FROM run_search_doc;
    """,
    # Finished runs kept compact: their events before the terminal run.status move into
    # compressed blocks (daemon/store/frames.py), in the background and a few at a time
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
    # The runs resumed from a run, found by index: deleting a run checks the parent_run_id
    # foreign key (and a deletion clears the link), and without this each deleted run read
    # every run (measured: deleting 10,000 runs took 10 s, 0.3 s with it).
    """
    CREATE INDEX runs_by_parent ON runs(parent_run_id);
    """,
    # Blocks name their codec: raw DEFLATE (the standard library's zlib) from now on; those
    # written before are zstandard, converted once by the compactor (upkeep/recoding.py),
    # which finds them by the partial index (empty once the conversion is done). Adding a
    # column with a default rewrites no row.
    """
    ALTER TABLE event_blocks ADD COLUMN codec TEXT NOT NULL DEFAULT 'zstd';
    CREATE INDEX event_blocks_zstd ON event_blocks(codec) WHERE codec = 'zstd';
    """,
    # Suites as files in the project (the file a suite is kept in, relative to the project,
    # and the sha256 of the bytes last read from it), and repetitions: a suite's default
    # count, and the count a suite run ran each case with.
    """
    ALTER TABLE suites ADD COLUMN file_path TEXT;
    ALTER TABLE suites ADD COLUMN file_digest TEXT;
    ALTER TABLE suites ADD COLUMN repeat INTEGER NOT NULL DEFAULT 1;
    ALTER TABLE suite_runs ADD COLUMN repeat INTEGER NOT NULL DEFAULT 1;
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
