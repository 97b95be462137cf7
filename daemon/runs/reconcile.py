"""A run's row and its events agree: how an ending closes open phases, and boot recovery,
which checks every run's row against its last status event and repairs either. Also how a
run that no daemon runs ends when it arrives active in an imported bundle."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from llamon_playground.common.contract import TERMINAL_STATUSES, RunStatus
from llamon_playground.common.wire.words import PhaseState
from llamon_playground.daemon.a2a.wire import WirePart
from llamon_playground.daemon.runs.end_rules import decide_orphan_end
from llamon_playground.daemon.runs.spool import TextSpool
from llamon_playground.daemon.runs.state import Reason
from llamon_playground.daemon.store.blobs import BlobStore, BlobWriter
from llamon_playground.daemon.store.bundles import Ending
from llamon_playground.daemon.store.database import Store
from llamon_playground.daemon.store.frames import STATUS_SQL, frame_payload
from llamon_playground.daemon.store.history import (
    RECOVERED_MARK,
    output_event_parts,
    run_update_op,
)
from llamon_playground.daemon.store.records import utcnow

log = logging.getLogger(__name__)

TERMINAL_VALUES = frozenset(s.value for s in TERMINAL_STATUSES)
# An imported run is never active: one the bundle holds as active ends as this says.
_IMPORTED = decide_orphan_end(Reason.IMPORTED)
IMPORTED_ENDING = Ending(_IMPORTED.status, Reason.IMPORTED, _IMPORTED.message)


# How a phase left open ends when the run ends otherwise than completed: with the run's own
# end, never `completed`. (A run that completes has no open phase; should one be left, it
# was cut short: `cancelled`.)
PHASE_END: dict[RunStatus, PhaseState] = {
    RunStatus.FAILED: PhaseState.FAILED,
    RunStatus.CANCELLED: PhaseState.CANCELLED,
    RunStatus.INTERRUPTED: PhaseState.INTERRUPTED,
}


def phase_end(status: RunStatus) -> PhaseState:
    """The state the open phases of a run ending `status` close with."""
    return PHASE_END.get(status, PhaseState.CANCELLED)


def closing_phases(open_phases: list[str], status: RunStatus, reason: str | None,
                   message: str | None) -> list[dict[str, Any]]:
    """One closing event per phase that started and did not end, innermost first, each with
    the run's end (`phase_end`); the innermost says why."""
    state = phase_end(status).value
    closing = []
    for index, phase in enumerate(reversed(open_phases)):
        event: dict[str, Any] = {"phase": phase, "state": state}
        if reason:
            event["reason"] = reason
        if index == 0 and message:
            event["message"] = message
        closing.append(event)
    return closing


def complete_phase(status: RunStatus, reason: str | None, message: str | None,
                   detail: dict[str, Any] | None = None) -> dict[str, Any]:
    """The `complete` phase event of a run ending `status`: `completed` (with the status)
    for a run that completed or waits for input, else the run's own end with its reason,
    message and detail (log_tail, file/line, recommended_run_command)."""
    if status not in PHASE_END:
        event: dict[str, Any] = {"phase": "complete", "state": PhaseState.COMPLETED.value,
                                 "status": status.value}
        if reason:
            event["reason"] = reason
        return event
    event = {"phase": "complete", "state": PHASE_END[status].value, "status": status.value}
    if reason:
        event["reason"] = reason
    if message:
        event["message"] = message
        event.update(detail or {})
    return event


@dataclass
class RunEvents:
    """What boot recovery needs from one run's events (its streamed text is read apart,
    only when it is needed: `fold_output`)."""

    last_status: dict[str, Any] = field(default_factory=dict)
    last_status_ts: str | None = None
    output: list[dict[str, Any]] | None = None  # the last run.output's parts
    complete: dict[str, Any] | None = None  # the complete phase event
    open_phases: list[str] = field(default_factory=list)

    @classmethod
    def read(cls, conn: sqlite3.Connection, run_id: str) -> RunEvents:
        found = cls()
        for kind, frame, ts in conn.execute(
                "SELECT kind, frame, ts FROM events WHERE run_id = ? AND kind IN "
                "('run.status', 'run.output', 'run.phase') ORDER BY seq", (run_id,)):
            body = frame_payload(frame)
            if kind == "run.status":
                found.last_status, found.last_status_ts = body, ts
            elif kind == "run.output":
                found.output = body.get("parts") or []
            elif body.get("phase") == "complete":
                found.complete = body
            elif body.get("state") == "started":
                found.open_phases.append(str(body.get("phase")))
            elif body.get("phase") in found.open_phases:
                found.open_phases.remove(str(body.get("phase")))
        return found


class DeltaFold:
    """output.delta events applied in order, as a client applies them: each appends to its
    artifact's text or replaces it. Each text is a TextSpool, as a live run's answer is:
    past TEXT_INLINE_BYTES it goes to the blob store as it is read (with `new_writer`), so
    folding a crashed run's 200 MB answer holds 64 KiB of it, not 200 MB. Without a
    `new_writer` (a test's client view) the text stays in memory, joined once."""

    def __init__(self, new_writer: Callable[[], BlobWriter] | None = None) -> None:
        self._new_writer = new_writer
        self.texts: dict[str | None, TextSpool] = {}

    def add(self, delta: dict[str, Any]) -> None:
        """Apply one output.delta."""
        key = delta.get("artifact_id")
        piece = delta.get("text") or ""
        spool = self.texts.get(key)
        if delta.get("append", True) and spool is not None:
            spool.append(piece)
            return
        if spool is not None:
            spool.discard()  # replaced: a blob begun for it goes
        self.texts[key] = TextSpool(WirePart("text", text=piece), self._new_writer)

    def text(self) -> str:
        """Every artifact's text, in order (a spilled one: its excerpt)."""
        return "".join(spool.text() for spool in self.texts.values())

    def stored_parts(self, on_error: Callable[[OSError], None]
                     ) -> tuple[list[dict[str, Any]], list[str]]:
        """The stored text parts (empty ones left out) and the blobs they name; blocking
        (a spilled text's blob is committed here)."""
        parts: list[dict[str, Any]] = []
        shas: list[str] = []
        for spool in self.texts.values():
            if spool.size == 0:
                continue
            doc, sha = spool.stored_now(on_error)
            parts.append(doc)
            if sha is not None:
                shas.append(sha)
        return parts, shas

    def discard(self) -> None:
        """Drop what was written for texts never stored (the fold failed midway)."""
        for spool in self.texts.values():
            spool.discard()


def fold_output(conn: sqlite3.Connection, run_id: str,
                new_writer: Callable[[], BlobWriter] | None) -> DeltaFold:
    """A run's stored output.delta events folded, read one row at a time."""
    fold = DeltaFold(new_writer)
    try:
        for (frame,) in conn.execute(
                "SELECT frame FROM events WHERE run_id = ? AND kind = 'output.delta' "
                "ORDER BY seq", (run_id,)):
            fold.add(frame_payload(frame))
    except BaseException:
        fold.discard()
        raise
    return fold


def _repair(conn: sqlite3.Connection, store: Store, run: sqlite3.Row,
            reason: str, new_writer: Callable[[], BlobWriter] | None) -> bool:
    """Make one run's row and events agree (in the caller's transaction); False if they
    did already."""
    events = RunEvents.read(conn, run["id"])
    last = events.last_status.get("status")
    row_over = run["status"] in TERMINAL_VALUES
    if row_over and last in TERMINAL_VALUES:
        return False
    added: list[tuple[str, dict[str, Any]]] = []
    if not row_over and last in TERMINAL_VALUES:
        # The events ended the run; the row missed it: take the ending from the events.
        changes: dict[str, Any] = {"status": last, "reason": events.last_status.get("reason"),
                                   "ended_at": events.last_status_ts or utcnow()}
        if events.output is not None:
            changes["output"] = events.output
        if events.complete and events.complete.get("message"):
            changes["error"] = {"kind": "error", "message": events.complete["message"]}
        run_update_op(run["id"], changes)(conn)
        return True
    if row_over:
        # The row ended the run; its events never said so: end the stream from the row.
        status = RunStatus(run["status"])
        run_reason, message = run["reason"], None
        error = orjson.loads(run["error"]) if run["error"] else None
        if error:
            message = error.get("message")
        output = orjson.loads(run["output"] or "[]")
    else:
        # Both still active: the daemon that ran it died. What it streamed is kept (stored
        # as a live run's answer is, a long text as a blob), then the part that says why
        # it ended (as every ending with a message has).
        decision = decide_orphan_end(reason)
        status, run_reason, message = decision.status, decision.reason, decision.message
        output, shas = fold_output(conn, run["id"], new_writer).stored_parts(
            lambda exc: added.append(("diagnostic", _blob_refused(run["id"], exc))))
        error = {"kind": "error", "message": message} if message else None
        if error:
            output.append(error)
        run_update_op(run["id"], {"status": status.value, "reason": run_reason,
                                  "ended_at": utcnow(), "output": output,
                                  "error": error}, shas)(conn)
    added.extend(("run.phase", c) for c in closing_phases(events.open_phases, status,
                                                           run_reason, message))
    if output and events.output is None:
        added.append(("run.output", {"parts": output_event_parts(run["id"], output)}))
    if events.complete is None:
        added.append(("run.phase", complete_phase(status, run_reason, message)))
    ending: dict[str, Any] = {"status": status.value, "previous": last or run["status"]}
    if run_reason:
        ending["reason"] = run_reason
    added.append(("run.status", ending))
    store.batches.insert_events(
        conn, [(run["id"], kind, orjson.dumps(body)) for kind, body in added], utcnow())
    return True


def _blob_refused(run_id: str, exc: OSError) -> dict[str, Any]:
    log.warning("run %s: its recovered output could not be stored whole: %s", run_id, exc)
    return {"level": "warning", "code": "history_degraded",
            "message": f"the recovered output could not be stored whole: {exc}"}


# How far boot recovery has checked: every run up to this rowid had its row and events
# agree when a boot last finished recovery. A run that ended then cannot disagree later
# (an ending commits its row and its events together), so the next boot checks only the
# runs after the mark and those still active (the partial index `one_active_run`): boot
# work does not grow with history. An import lowers the mark below the rows it adds
# (rowids of deleted runs are given again), so they are checked at the next boot.
ACTIVE_SQL = "status IN ('queued', 'preparing', 'running')"  # one_active_run's condition
CANDIDATES_SQL = (
    "SELECT r.id, r.status, r.reason, r.error, r.output, "
    f"(SELECT {STATUS_SQL} FROM events "
    " WHERE run_id = r.id AND kind = 'run.status' ORDER BY seq DESC LIMIT 1) AS last "
    "FROM runs r WHERE r.rowid > :mark "
    "UNION ALL "
    "SELECT r.id, r.status, r.reason, r.error, r.output, "
    f"(SELECT {STATUS_SQL} FROM events "
    " WHERE run_id = r.id AND kind = 'run.status' ORDER BY seq DESC LIMIT 1) AS last "
    f"FROM runs r WHERE r.{ACTIVE_SQL} AND +r.rowid <= :mark")  # + : by one_active_run


async def reconcile_runs(store: Store, reason: str,
                         stopped: frozenset[str] = frozenset(),
                         blobs: BlobStore | None = None) -> list[str]:
    """Boot recovery: every run's row and its last status event agree afterwards. A run
    both say is active belongs to a daemon that died: it ends for `reason`; or, when it is
    one of `stopped` (the previous daemon stopped cleanly but could not write its ending),
    for `studio_shutdown`. Returns the ids of the runs repaired. A crashed run's long
    streamed text goes to `blobs` as it is read (without them, a unit test's store, it
    stays in memory)."""
    new_writer = blobs.writer if blobs is not None else None

    def op(conn: sqlite3.Connection) -> list[str]:
        row = conn.execute("SELECT value FROM upkeep WHERE key = ?", (RECOVERED_MARK,)).fetchone()
        runs = conn.execute(CANDIDATES_SQL, {"mark": int(row[0]) if row else 0}).fetchall()
        repaired = []
        for run in runs:
            if run["status"] in TERMINAL_VALUES and run["last"] in TERMINAL_VALUES:
                continue
            if _repair(conn, store, run,
                       Reason.STUDIO_SHUTDOWN if run["id"] in stopped else reason, new_writer):
                repaired.append(run["id"])
        conn.execute("INSERT INTO upkeep (key, value) VALUES (?, (SELECT coalesce(max(rowid), 0) "
                     "FROM runs)) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                     (RECOVERED_MARK,))
        return repaired

    def with_rows(conn: sqlite3.Connection) -> list[str]:
        factory = conn.row_factory
        conn.row_factory = sqlite3.Row
        try:
            return op(conn)
        finally:
            conn.row_factory = factory

    repaired = await store.write(with_rows)
    if repaired:
        log.warning("boot recovery repaired %d run(s): %s", len(repaired), ", ".join(repaired))
    return repaired
