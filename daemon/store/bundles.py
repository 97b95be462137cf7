"""Bundle v1: a reproduction to hand to a colleague (docs/storage.md, "Bundles").

Export: the selected sessions and runs, every run's resume ancestors and its session, their
events, and each referenced blob once (base64, keyed by sha256), read from one SQLite
snapshot. Metadata is redacted again and the reserved key dropped on the way out; `.env`
and the capture token are never in history, so never in a bundle.

Import: the whole bundle is validated in memory first (daemon/data/bundle_validate.py);
then the new blobs are written, each decoded a slice at a time into a temp file (fsync,
rename), then every row goes in one transaction with fresh session, context and run IDs
(a `run.output` event's `content_url`s name the imported run). If that transaction fails,
the blobs this import created are removed again, so the database and the file store are
as they were.
A run the bundle holds as active ends as the caller says (`Ending`): the run lifecycle's
table decides that, and it lives in a room above this one.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import sqlite3
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import orjson

from llamon_playground.common.contract import ACTIVE_STATUSES, RunStatus
from llamon_playground.common.ids import new_context_id, new_run_id, new_session_id
from llamon_playground.common.limits import DEFAULT_LIMITS, Limits
from llamon_playground.common.wire.words import BUNDLE_FORMAT
from llamon_playground.daemon.data.big_documents import dismantle
from llamon_playground.daemon.data.bundle_json import bundle_of, file_parts
from llamon_playground.daemon.data.bundle_suites import case_file_shas, remap_baseline, suite_doc
from llamon_playground.daemon.data.bundle_validate import (
    MAX_BLOB_BYTES,
    MAX_BLOBS,
    MAX_TOTAL_BLOB_BYTES,
    ValidBundle,
    decoded_chunks,
    decoded_size,
    validate_bundle,
)
from llamon_playground.daemon.data.redact import redact_metadata
from llamon_playground.daemon.errors import Conflict, NotFound, PayloadTooLarge
from llamon_playground.daemon.store.blobs import BlobStore
from llamon_playground.daemon.store.database import Store
from llamon_playground.daemon.store.frames import (
    EVENT_COLUMNS_IN_DATA,
    INSERT_EVENTS,
    build_frame,
    frame_payload,
    stored_events,
)
from llamon_playground.daemon.store.history import (
    RUN_JSON_COLUMNS,
    output_event_parts,
    recheck_next_runs,
)
from llamon_playground.daemon.store.records import EventRow, utcnow

PRIVACY_WARNING = (
    "This bundle includes user content: the text, data and files of every run are exported "
    "as they were sent and received (only metadata secrets are redacted). Review it before "
    "sharing.")
SESSION_COLUMNS = ("id", "title", "context_id", "created_at", "metadata")
RUN_COLUMNS = ("id", "session_id", "status", "reason", "created_at", "started_at", "ended_at",
               "duration_ms", "context_id", "task_id", "parent_run_id", "rerun_of",
               "resumed_by", "input", "output", "error", "scores", "generation",
               "recommended_run_command", "label", "note", "edited_fields", "code_fingerprint",
               "a2a_version")
ACTIVE_VALUES = frozenset(s.value for s in ACTIVE_STATUSES)


class Ending(NamedTuple):
    """How an imported run that was still active ends: never active here."""

    status: RunStatus
    reason: str
    message: str | None = None  # its error's, when the bundle's row has none
IN_CHUNK = 500  # ids per `IN (...)`: far below SQLite's variable limit


# -- export -----------------------------------------------------------------------------------

async def export_bundle(db_path: Path, blobs: BlobStore, session_ids: list[str] | None,
                        run_ids: list[str] | None) -> dict[str, Any]:
    return await asyncio.to_thread(_export_sync, db_path, blobs, session_ids, run_ids)


def _export_sync(db_path: Path, blobs: BlobStore, session_ids: list[str] | None,
                 run_ids: list[str] | None) -> dict[str, Any]:
    # Its own read-only connection: one snapshot for every read, off the shared reader.
    conn = sqlite3.connect(f"{db_path.as_uri()}?mode=ro", uri=True, isolation_level=None)
    conn.row_factory = sqlite3.Row
    try:
        conn.execute("BEGIN")
        runs, sessions, suites, events = read_selection(conn, session_ids, run_ids)
        conn.execute("COMMIT")
    finally:
        conn.close()
    run_docs = [_run_doc(r) for r in runs]
    in_suites = {sha for suite in suites for case in suite["cases"]
                 for sha in case_file_shas(case)}
    doc = {"format": BUNDLE_FORMAT, "exported_at": utcnow(), "privacy_warning": PRIVACY_WARNING,
           "sessions": [_session_doc(s) for s in sessions], "runs": run_docs,
           "events": [{"seq": seq, "run_id": run_id, "kind": kind,
                       "payload": frame_payload(frame), "ts": ts}
                      for seq, run_id, kind, ts, frame in events],
           "blobs": _export_blobs(blobs, run_docs, in_suites)}
    if suites:
        doc["suites"] = suites
    return doc


def read_selection(conn: sqlite3.Connection, session_ids: list[str] | None,
                   run_ids: list[str] | None
                   ) -> tuple[list[sqlite3.Row], list[sqlite3.Row], list[dict[str, Any]],
                              list[EventRow]]:
    """The rows an export holds (runs, sessions, suites, events), read inside the caller's
    transaction. A selection reads only its own rows, each by an index (a test holds every
    statement to that): exporting one session of a year's history costs what it costs
    from an empty one."""
    runs = _selected_runs(conn, session_ids, run_ids)
    wanted_sessions = None if session_ids is None and run_ids is None else sorted(
        {*(session_ids or []), *(r["session_id"] for r in runs)})
    sessions = _rows(conn, "sessions", "id", wanted_sessions)
    # Suites travel with a whole-history export (their cases name runs anywhere in it).
    suites = _suite_docs(conn) if session_ids is None and run_ids is None else []
    return runs, sessions, suites, stored_events(conn, [r["id"] for r in runs])


def _suite_docs(conn: sqlite3.Connection) -> list[dict[str, Any]]:
    return [suite_doc(suite, list(conn.execute(
                "SELECT * FROM suite_cases WHERE suite_id = ? ORDER BY position",
                (suite["id"],))))
            for suite in conn.execute("SELECT * FROM suites ORDER BY rowid")]


def _selected_runs(conn: sqlite3.Connection, session_ids: list[str] | None,
                   run_ids: list[str] | None) -> list[sqlite3.Row]:
    """The chosen runs plus every resume ancestor, oldest first."""
    if session_ids is None and run_ids is None:
        return _rows(conn, "runs", "id", None)
    for session_id in session_ids or []:
        if conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone() is None:
            raise NotFound(f"no session {session_id}", code="session_not_found")
    chosen = {r["id"]: r for r in _rows(conn, "runs", "session_id", session_ids or [])}
    for run_id in run_ids or []:
        if run_id not in chosen:
            row = conn.execute("SELECT rowid AS _rowid, * FROM runs WHERE id = ?",
                               (run_id,)).fetchone()
            if row is None:
                raise NotFound(f"no run {run_id}", code="run_not_found")
            chosen[run_id] = row
    pending = [r["parent_run_id"] for r in chosen.values()]
    while pending:
        parent = pending.pop()
        if parent is None or parent in chosen:
            continue
        row = conn.execute("SELECT rowid AS _rowid, * FROM runs WHERE id = ?",
                           (parent,)).fetchone()
        if row is not None:
            chosen[parent] = row
            pending.append(row["parent_run_id"])
    return sorted(chosen.values(), key=lambda r: (r["created_at"], r["_rowid"]))


def _rows(conn: sqlite3.Connection, table: str, column: str,
          values: list[str] | None) -> list[sqlite3.Row]:
    """Rows of `table` whose `column` is in `values` (all rows for None), oldest first."""
    if values is None:
        found = list(conn.execute(f"SELECT rowid AS _rowid, * FROM {table}"))
    else:
        found = [row for chunk in _chunks(values) for row in conn.execute(
            f"SELECT rowid AS _rowid, * FROM {table} WHERE {column} IN ({_marks(chunk)})",
            chunk)]
    return sorted(found, key=lambda r: (r["created_at"], r["_rowid"]))


def _chunks(values: list[str]) -> Iterator[list[str]]:
    for start in range(0, len(values), IN_CHUNK):
        yield values[start:start + IN_CHUNK]


def _marks(chunk: list[str]) -> str:
    return ", ".join("?" for _ in chunk)


def _session_doc(row: sqlite3.Row) -> dict[str, Any]:
    doc = {c: row[c] for c in SESSION_COLUMNS}
    doc["metadata"] = redact_metadata(orjson.loads(row["metadata"]))
    return doc


def _run_doc(row: sqlite3.Row) -> dict[str, Any]:
    doc = {c: row[c] for c in RUN_COLUMNS}
    for column in RUN_JSON_COLUMNS:
        doc[column] = orjson.loads(doc[column]) if doc[column] is not None else None
    stored_input = doc["input"]
    if isinstance(stored_input, dict) and isinstance(stored_input.get("metadata"), dict):
        stored_input["metadata"] = redact_metadata(stored_input["metadata"])
    return doc


def _export_blobs(blobs: BlobStore, runs: list[dict[str, Any]],
                  also: set[str]) -> dict[str, Any]:
    """Each referenced blob once; refused when an import of it would be refused."""
    shas = sorted({part["sha256"] for run in runs for part in file_parts(run)} | also)
    sizes = {}
    for sha in shas:
        try:
            sizes[sha] = blobs.path_for(sha).stat().st_size
        except FileNotFoundError as exc:
            raise Conflict(f"file {sha} is missing from the file store", code="blob_missing",
                           sha256=sha) from exc
    if (len(shas) > MAX_BLOBS or sum(sizes.values()) > MAX_TOTAL_BLOB_BYTES
            or any(size > MAX_BLOB_BYTES for size in sizes.values())):
        raise PayloadTooLarge(
            f"the selection's files exceed what a bundle may hold ({MAX_BLOBS} blobs, "
            f"{MAX_BLOB_BYTES} bytes each, {MAX_TOTAL_BLOB_BYTES} in all); export fewer "
            "sessions or runs", code="bundle_too_large")
    out = {}
    for sha in shas:
        data = blobs.read(sha)
        if hashlib.sha256(data).hexdigest() != sha:
            raise Conflict(f"file {sha} in the file store does not match its hash",
                           code="blob_corrupt", sha256=sha)
        out[sha] = {"bytes_base64": base64.b64encode(data).decode(), "size": len(data)}
    return out


# -- import -----------------------------------------------------------------------------------

@dataclass
class ImportPlan:
    """The rows an import writes, with their new IDs."""

    sessions: list[dict[str, Any]] = field(default_factory=list)
    runs: list[dict[str, Any]] = field(default_factory=list)
    run_files: list[tuple[str, str]] = field(default_factory=list)
    events: list[tuple[str, str, bytes, str]] = field(default_factory=list)
    session_ids: dict[str, str] = field(default_factory=dict)
    run_ids: dict[str, str] = field(default_factory=dict)
    suites: list[dict[str, Any]] = field(default_factory=list)  # with their cases, new ids
    suite_ids: dict[str, str] = field(default_factory=dict)


async def import_bundle(store: Store, blobs: BlobStore, body: Any, interrupted: Ending,
                        limits: Limits = DEFAULT_LIMITS) -> dict[str, Any]:
    """Write a parsed bundle's sessions, runs, events and files; the new IDs by old ones.
    `body` is used up: its lists are emptied as it is let go (big_documents)."""
    bundle = bundle_of(body)
    valid: ValidBundle | None = None
    plan: ImportPlan | None = None
    try:
        valid = await asyncio.to_thread(validate_bundle, bundle, limits)
        # Redaction and the dumps of each row, off the loop.
        plan = await asyncio.to_thread(plan_import, valid, interrupted)
        created = await asyncio.to_thread(blobs.put_all_checked, {
            sha: (decoded_chunks(text), decoded_size(text)) for sha, text in valid.blobs.items()})
        rows = plan
        try:
            await store.write(lambda conn: _write_rows(store, conn, rows))
        except Exception:
            # Nothing was committed: take back exactly the blobs this import added.
            for sha in created:
                blobs.unlink(sha)
            raise
        return {"sessions": plan.session_ids, "runs": plan.run_ids, "suites": plan.suite_ids}
    finally:
        # Millions of objects: freed a slice at a time, off the loop's thread.
        await asyncio.to_thread(dismantle, plan, valid, bundle)


def plan_import(valid: ValidBundle, interrupted: Ending) -> ImportPlan:
    plan = ImportPlan()
    now = utcnow()
    plan.session_ids = {s["id"]: new_session_id() for s in valid.sessions}
    plan.run_ids = {r["id"]: new_run_id() for r in valid.runs}
    for session in valid.sessions:
        # A fresh contextId too: the Host never saw the old one, and importing the same
        # bundle twice must not make two sessions share one A2A conversation.
        plan.sessions.append({
            "id": plan.session_ids[session["id"]],
            "title": f"{(session.get('title') or 'untitled')[:489]} (imported)",
            "context_id": new_context_id(), "created_at": session.get("created_at") or now,
            "metadata": orjson.dumps(redact_metadata(session.get("metadata") or {})).decode()})
    was_active: dict[str, str] = {}
    for run in valid.runs:
        row = _run_row(run, plan, now, interrupted)
        if run["status"] in ACTIVE_VALUES:
            was_active[row["id"]] = run["status"]  # an imported run is never active
        plan.runs.append(row)
    for run in valid.runs:
        new_id = plan.run_ids[run["id"]]
        shas = {part["sha256"] for part in file_parts(run)}
        plan.run_files.extend((new_id, sha) for sha in sorted(shas))
    for event in valid.events:
        payload = {k: v for k, v in (event.get("payload") or {}).items()
                   if k not in EVENT_COLUMNS_IN_DATA}
        new_id = plan.run_ids[event["run_id"]]
        if event["kind"] == "run.output" and isinstance(payload.get("parts"), list):
            payload["parts"] = output_event_parts(new_id, payload["parts"])  # links: this run
        # A right-sized copy: orjson's small answers keep a ~4 KiB buffer each, which held
        # by the hundred thousand made an import's plan 50 times its events' size.
        plan.events.append((new_id, event["kind"],
                            bytes(memoryview(orjson.dumps(payload))), event.get("ts") or now))
    _plan_suites(valid, plan, now)
    for run_id, previous in was_active.items():
        plan.events.append((run_id, "run.status", orjson.dumps({
            "status": interrupted.status.value, "previous": previous,
            "reason": interrupted.reason}), now))
    return plan


def _plan_suites(valid: ValidBundle, plan: ImportPlan, now: str) -> None:
    """New suite and case ids; baselines name the imported runs by their new ids."""
    for suite in valid.suites:
        new_id = plan.suite_ids[suite["id"]] = f"sui_{uuid.uuid4().hex}"
        cases = [{"id": f"case_{uuid.uuid4().hex}", "position": n, "kind": case["kind"],
                  "source_run_id": plan.run_ids.get(case.get("source_run_id") or "",
                                                    case.get("source_run_id")),
                  "source_session_id": plan.session_ids.get(case.get("source_session_id") or "",
                                                            case.get("source_session_id")),
                  "turns": orjson.dumps(case["turns"]).decode(),
                  "baseline": orjson.dumps(remap_baseline(case["baseline"],
                                                          plan.run_ids)).decode(),
                  "shas": sorted(case_file_shas(case))}
                 for n, case in enumerate(suite["cases"])]
        plan.suites.append({"id": new_id, "name": suite["name"],
                            "created_at": suite.get("created_at") or now,
                            "run_on_save": int(bool(suite.get("run_on_save"))),
                            "cases": cases})


def _write_suites(conn: sqlite3.Connection, suites: list[dict[str, Any]]) -> None:
    for suite in suites:
        name, n = suite["name"], 1
        # Names are unique here: an imported suite whose name is taken gets a number.
        while conn.execute("SELECT 1 FROM suites WHERE name = ?", (name,)).fetchone():
            n += 1
            name = f"{suite['name'][:190]} ({n})"
        conn.execute("INSERT INTO suites (id, name, created_at, run_on_save) "
                     "VALUES (?, ?, ?, ?)",
                     (suite["id"], name, suite["created_at"], suite["run_on_save"]))
        for case in suite["cases"]:
            conn.execute("INSERT INTO suite_cases (id, suite_id, position, kind, source_run_id, "
                         "source_session_id, turns, baseline) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                         (case["id"], suite["id"], case["position"], case["kind"],
                          case["source_run_id"], case["source_session_id"], case["turns"],
                          case["baseline"]))
            conn.executemany("INSERT INTO suite_files (case_id, sha256) VALUES (?, ?)",
                             [(case["id"], sha) for sha in case["shas"]])


def _run_row(run: dict[str, Any], plan: ImportPlan, now: str,
             interrupted: Ending) -> dict[str, Any]:
    row: dict[str, Any] = {c: run.get(c) for c in RUN_COLUMNS}
    ids = plan.run_ids
    row.update(id=ids[run["id"]], session_id=plan.session_ids[run["session_id"]],
               parent_run_id=ids.get(run.get("parent_run_id") or ""),
               rerun_of=ids.get(run.get("rerun_of") or ""),
               resumed_by=ids.get(run.get("resumed_by") or ""))
    if run["status"] in ACTIVE_VALUES:
        row.update(status=interrupted.status.value, reason=interrupted.reason,
                   ended_at=row["ended_at"] or now, error=row["error"] or (interrupted.message and {
                       "kind": "error", "message": interrupted.message}))
    stored_input = dict(run["input"])
    stored_input["metadata"] = redact_metadata(stored_input.get("metadata") or {})
    row.update(input=stored_input, output=run.get("output") or [],
               scores=run.get("scores") or [])
    for column in RUN_JSON_COLUMNS:
        if row[column] is not None:
            row[column] = orjson.dumps(row[column]).decode()
    return row


def _write_rows(store: Store, conn: sqlite3.Connection, plan: ImportPlan) -> None:
    conn.executemany(
        f"INSERT INTO sessions ({', '.join(SESSION_COLUMNS)}) "
        f"VALUES ({', '.join(':' + c for c in SESSION_COLUMNS)})", plan.sessions)
    recheck_next_runs(conn)  # a bundle's row and events may disagree: the next boot checks
    # plan.runs lists parents first: the parent_run_id foreign key is checked per row.
    conn.executemany(
        f"INSERT INTO runs ({', '.join(RUN_COLUMNS)}) "
        f"VALUES ({', '.join(':' + c for c in RUN_COLUMNS)})", plan.runs)
    conn.executemany("INSERT INTO run_files (run_id, sha256) VALUES (?, ?)", plan.run_files)
    _write_suites(conn, plan.suites)
    first = store.batches.reserve_seqs(len(plan.events))
    conn.executemany(INSERT_EVENTS, [
        (first + i, run_id, kind, ts, build_frame(first + i, run_id, kind, payload))
        for i, (run_id, kind, payload, ts) in enumerate(plan.events)])

