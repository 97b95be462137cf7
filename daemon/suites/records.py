"""The suite tables as rows: suites and their cases, suite runs and each case's result.

JSON columns (`turns`, `baseline`, `run_ids`, `result`, `row`) are decoded on the way out.
The blobs a case's inputs use are listed in `suite_files`, so deleting the run they came
from keeps them.
"""

from __future__ import annotations

import sqlite3
import uuid
from typing import Any

import orjson

from llamon_playground.common.wire.suites import SuiteRunStatus
from llamon_playground.daemon.errors import Conflict
from llamon_playground.daemon.store.database import Store
from llamon_playground.daemon.store.records import utcnow
from llamon_playground.daemon.store.search.run_line import input_line_sql
from llamon_playground.daemon.suites.cases import Case

JSON_COLUMNS = ("turns", "baseline", "run_ids", "result", "row")


def new_suite_id() -> str:
    return f"sui_{uuid.uuid4().hex}"


def new_case_id() -> str:
    return f"case_{uuid.uuid4().hex}"


def new_suite_run_id() -> str:
    return f"srun_{uuid.uuid4().hex}"


def _doc(row: sqlite3.Row) -> dict[str, Any]:
    doc = dict(row)
    for key in JSON_COLUMNS:
        if key in doc and doc[key] is not None:
            doc[key] = orjson.loads(doc[key])
    if "run_on_save" in doc:
        doc["run_on_save"] = bool(doc["run_on_save"])
    return doc


def _dumps(value: Any) -> str:
    return orjson.dumps(value).decode()


def insert_cases_op(conn: sqlite3.Connection, suite_id: str, cases: list[Case]) -> list[str]:
    ids = []
    for position, case in enumerate(cases):
        case_id = new_case_id()
        ids.append(case_id)
        conn.execute(
            "INSERT INTO suite_cases (id, suite_id, position, kind, source_run_id, "
            "source_session_id, turns, baseline) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (case_id, suite_id, position, case.kind, case.source_run_id,
             case.source_session_id, _dumps(case.turns), _dumps(case.baseline)))
        conn.executemany("INSERT OR IGNORE INTO suite_files (case_id, sha256) VALUES (?, ?)",
                         [(case_id, sha) for sha in sorted(case.file_shas)])
    return ids


async def insert_suite(store: Store, name: str, run_on_save: bool,
                       cases: list[Case], *, repeat: int = 1, file_path: str | None = None,
                       file_digest: str | None = None) -> str:
    """The new suite's id; 409 `suite_name_taken` when another suite has the name."""
    suite_id = new_suite_id()

    def op(conn: sqlite3.Connection) -> None:
        try:
            conn.execute("INSERT INTO suites (id, name, created_at, run_on_save, repeat, "
                         "file_path, file_digest) VALUES (?, ?, ?, ?, ?, ?, ?)",
                         (suite_id, name, utcnow(), int(run_on_save), repeat, file_path,
                          file_digest))
        except sqlite3.IntegrityError as exc:
            raise Conflict(f"a suite named {name!r} exists", code="suite_name_taken") from exc
        insert_cases_op(conn, suite_id, cases)
    await store.write(op)
    return suite_id


SUITE_SQL = ("SELECT s.*, (SELECT COUNT(*) FROM suite_cases c WHERE c.suite_id = s.id) "
             "AS case_count, (SELECT id FROM suite_runs r WHERE r.suite_id = s.id "
             "ORDER BY r.rowid DESC LIMIT 1) AS last_suite_run_id FROM suites s")


async def list_suites(store: Store) -> list[dict[str, Any]]:
    return [_doc(r) for r in await store.fetch_all(SUITE_SQL + " ORDER BY s.rowid")]


async def get_suite(store: Store, suite_id: str) -> dict[str, Any] | None:
    row = await store.fetch_one(SUITE_SQL + " WHERE s.id = ?", (suite_id,))
    return _doc(row) if row else None


async def suites_on_save(store: Store) -> list[dict[str, Any]]:
    return [_doc(r) for r in await store.fetch_all(
        SUITE_SQL + " WHERE s.run_on_save = 1 ORDER BY s.rowid")]


async def get_cases(store: Store, suite_id: str) -> list[dict[str, Any]]:
    return [_doc(r) for r in await store.fetch_all(
        "SELECT * FROM suite_cases WHERE suite_id = ? ORDER BY position", (suite_id,))]


async def existing_runs(store: Store, run_ids: list[str]) -> set[str]:
    found: set[str] = set()
    for start in range(0, len(run_ids), 500):
        chunk = run_ids[start:start + 500]
        rows = await store.fetch_all(
            f"SELECT id FROM runs WHERE id IN ({', '.join('?' * len(chunk))})", chunk)
        found.update(r[0] for r in rows)
    return found


async def update_suite(store: Store, suite_id: str, fields: dict[str, Any]) -> None:
    values = {k: int(v) if k == "run_on_save" else v for k, v in fields.items()}

    def op(conn: sqlite3.Connection) -> None:
        if not values:
            return
        sets = ", ".join(f"{k} = :{k}" for k in values)
        try:
            conn.execute(f"UPDATE suites SET {sets} WHERE id = :_id", {**values, "_id": suite_id})
        except sqlite3.IntegrityError as exc:
            raise Conflict(f"a suite named {fields.get('name')!r} exists",
                           code="suite_name_taken") from exc
    await store.write(op)


async def replace_cases(store: Store, suite_id: str, fields: dict[str, Any],
                        cases: list[Case]) -> None:
    """A file suite read again: its fields and its cases as the file now says. A case keeps
    its id where its position stays (the reports of earlier suite runs still find it);
    cases past the new end go."""
    def op(conn: sqlite3.Connection) -> None:
        if fields:
            sets = ", ".join(f"{k} = :{k}" for k in fields)
            try:
                conn.execute(f"UPDATE suites SET {sets} WHERE id = :_id",
                             {**fields, "_id": suite_id})
            except sqlite3.IntegrityError as exc:
                raise Conflict(f"a suite named {fields.get('name')!r} exists",
                               code="suite_name_taken") from exc
        old = [r[0] for r in conn.execute(
            "SELECT id FROM suite_cases WHERE suite_id = ? ORDER BY position", (suite_id,))]
        for case_id in old:
            conn.execute("DELETE FROM suite_files WHERE case_id = ?", (case_id,))
        for position, case in enumerate(cases):
            if position < len(old):
                conn.execute("UPDATE suite_cases SET kind = ?, source_run_id = NULL, "
                             "source_session_id = NULL, turns = ?, baseline = ? WHERE id = ?",
                             (case.kind, _dumps(case.turns), _dumps(case.baseline),
                              old[position]))
                case_id = old[position]
            else:
                case_id = new_case_id()
                conn.execute(
                    "INSERT INTO suite_cases (id, suite_id, position, kind, turns, baseline) "
                    "VALUES (?, ?, ?, ?, ?, ?)", (case_id, suite_id, position, case.kind,
                                                  _dumps(case.turns), _dumps(case.baseline)))
            conn.executemany("INSERT OR IGNORE INTO suite_files (case_id, sha256) "
                             "VALUES (?, ?)", [(case_id, sha) for sha in sorted(case.file_shas)])
        conn.executemany("DELETE FROM suite_cases WHERE id = ?",
                         [(i,) for i in old[len(cases):]])
    await store.write(op)


async def set_baselines(store: Store, baselines: dict[str, dict[str, Any]]) -> None:
    def op(conn: sqlite3.Connection) -> None:
        conn.executemany("UPDATE suite_cases SET baseline = ? WHERE id = ?",
                         [(_dumps(b), case_id) for case_id, b in baselines.items()])
    await store.write(op)


async def delete_suite(store: Store, suite_id: str) -> list[str]:
    """The suite, its cases, runs, results and their events; the blobs its cases held."""
    def op(conn: sqlite3.Connection) -> list[str]:
        cases = [r[0] for r in conn.execute(
            "SELECT id FROM suite_cases WHERE suite_id = ?", (suite_id,))]
        shas: set[str] = set()
        for case_id in cases:
            shas.update(r[0] for r in conn.execute(
                "SELECT sha256 FROM suite_files WHERE case_id = ?", (case_id,)))
            conn.execute("DELETE FROM suite_files WHERE case_id = ?", (case_id,))
        for (run_id,) in conn.execute("SELECT id FROM suite_runs WHERE suite_id = ?",
                                      (suite_id,)).fetchall():
            conn.execute("DELETE FROM events WHERE run_id = ?", (run_id,))
            conn.execute("DELETE FROM suite_results WHERE suite_run_id = ?", (run_id,))
        conn.execute("DELETE FROM suite_runs WHERE suite_id = ?", (suite_id,))
        conn.execute("DELETE FROM suite_cases WHERE suite_id = ?", (suite_id,))
        conn.execute("DELETE FROM suites WHERE id = ?", (suite_id,))
        return sorted(shas)
    return await store.write(op)


# -- suite runs ---------------------------------------------------------------------------

# The session of a suite's latest run, while it exists: where the next run's cases go too.
SUITE_SESSION_SQL = (
    "SELECT r.session_id FROM suite_runs r JOIN sessions s ON s.id = r.session_id "
    "WHERE r.suite_id = ? ORDER BY r.rowid DESC LIMIT 1")


async def insert_suite_run(store: Store, row: dict[str, Any], cases: list[dict[str, Any]],
                           session: dict[str, Any]) -> str:
    """The suite run, a pending result a case and the session its cases' runs go to, in one
    write (a run on save starts one commit after the Host is Ready): the session of the
    suite's runs before (one session a suite, however often it runs), else `session`, made
    now. Answers the session's id (also set in `row`)."""
    def op(conn: sqlite3.Connection) -> str:
        found = conn.execute(SUITE_SESSION_SQL, (row["suite_id"],)).fetchone()
        if found is None:
            conn.execute("INSERT INTO sessions (id, title, context_id, created_at, metadata) "
                         "VALUES (:id, :title, :context_id, :created_at, :metadata)", session)
        row["session_id"] = found[0] if found is not None else session["id"]
        conn.execute("INSERT INTO suite_runs (id, suite_id, session_id, status, trigger, "
                     "created_at, repeat) VALUES (:id, :suite_id, :session_id, :status, "
                     ":trigger, :created_at, :repeat)", row)
        conn.executemany(
            "INSERT INTO suite_results (suite_run_id, case_id, position, state) "
            "VALUES (?, ?, ?, 'pending')", [(row["id"], c["id"], c["position"]) for c in cases])
        return str(row["session_id"])
    return str(await store.write(op))


def suite_run_update_op(suite_run_id: str, fields: dict[str, Any]) -> Any:
    sets = ", ".join(f"{k} = :{k}" for k in fields)

    def op(conn: sqlite3.Connection) -> None:
        conn.execute(f"UPDATE suite_runs SET {sets} WHERE id = :_id",
                     {**fields, "_id": suite_run_id})
    return op


def result_update_op(suite_run_id: str, case_id: str, fields: dict[str, Any]) -> Any:
    values = {k: _dumps(v) if k in JSON_COLUMNS and v is not None else v
              for k, v in fields.items()}
    sets = ", ".join(f"{k} = :{k}" for k in values)

    def op(conn: sqlite3.Connection) -> None:
        conn.execute(f"UPDATE suite_results SET {sets} WHERE suite_run_id = :_run AND "
                     "case_id = :_case", {**values, "_run": suite_run_id, "_case": case_id})
    return op


def skip_rest_op(suite_run_id: str, reason: str) -> Any:
    """Every case not done yet is `skipped` (with why)."""
    def op(conn: sqlite3.Connection) -> None:
        conn.execute("UPDATE suite_results SET state = 'skipped', result = ? "
                     "WHERE suite_run_id = ? AND state IN ('pending', 'running')",
                     (_dumps({"skipped_for": reason}), suite_run_id))
    return op


async def get_suite_run(store: Store, suite_run_id: str) -> dict[str, Any] | None:
    row = await store.fetch_one("SELECT * FROM suite_runs WHERE id = ?", (suite_run_id,))
    return _doc(row) if row else None


async def get_results(store: Store, suite_run_id: str) -> list[dict[str, Any]]:
    return [_doc(r) for r in await store.fetch_all(
        "SELECT r.*, c.kind, c.baseline FROM suite_results r "
        "LEFT JOIN suite_cases c ON c.id = r.case_id "
        "WHERE r.suite_run_id = ? ORDER BY r.position", (suite_run_id,))]


# What a report reads of each case: its row and the few baseline fields it shows, cut out
# in SQL (the stored result and baseline hold whole outputs, which a report never shows).
# A case names itself by its first turn's input (`input_line`), its turn count and when
# its first new run started.
REPORT_SQL = f"""
SELECT r.case_id, r.position, r.state, r.run_ids, r.row,
       json_extract(r.result, '$.skipped_for') AS skipped_for, c.kind,
       {input_line_sql("c.turns", "$[0].input")}, json_array_length(c.turns) AS turn_count,
       (SELECT created_at FROM runs WHERE id = json_extract(r.run_ids, '$[0]'))
         AS run_created_at,
       json_object('run_id', json_extract(c.baseline, '$.run_id'),
                   'run_ids', json(coalesce(json_extract(c.baseline, '$.run_ids'), '[]')),
                   'status', json_extract(c.baseline, '$.status'),
                   'source', json_extract(c.baseline, '$.source'),
                   'suite_run_id', json_extract(c.baseline, '$.suite_run_id'),
                   'code_fingerprint', json_extract(c.baseline, '$.code_fingerprint'))
         AS baseline
FROM suite_results r LEFT JOIN suite_cases c ON c.id = r.case_id
WHERE r.suite_run_id = ? ORDER BY r.position
"""


async def report_rows(store: Store, suite_run_id: str) -> list[dict[str, Any]]:
    return [_doc(r) for r in await store.fetch_all(REPORT_SQL, (suite_run_id,))]


async def list_suite_runs(store: Store, suite_id: str, limit: int = 100) -> list[dict[str, Any]]:
    return [_doc(r) for r in await store.fetch_all(
        "SELECT * FROM suite_runs WHERE suite_id = ? ORDER BY rowid DESC LIMIT ?",
        (suite_id, limit))]


async def unfinished_suite_runs(store: Store) -> list[dict[str, Any]]:
    return [_doc(r) for r in await store.fetch_all(
        "SELECT * FROM suite_runs WHERE status = ?", (SuiteRunStatus.RUNNING.value,))]
