"""A run's record in history: its events, its row updates and the terminal write."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from llamon_playground.daemon.runs.ending import RunEnding
from llamon_playground.daemon.runs.reconcile import closing_phases, complete_phase
from llamon_playground.daemon.runs.state import RunStatus
from llamon_playground.daemon.store.blobs import BlobStore
from llamon_playground.daemon.store.database import Store
from llamon_playground.daemon.store.history import output_event_parts, run_update_op
from llamon_playground.daemon.store.records import utcnow

log = logging.getLogger(__name__)

ERROR_DETAIL_KEYS = ("log_tail", "file", "line", "column")


class RunJournal:
    """What a run writes to history, all through the store's ordered queue; it also keeps the
    phases still open, so the terminal write can close them."""

    def __init__(self, store: Store, blobs: BlobStore) -> None:
        self._store = store
        self._blobs = blobs
        # Per run, the phases that started and did not end yet (the ending closes them).
        self._open: dict[str, list[str]] = {}

    def event(self, run_id: str, kind: str, payload: dict[str, Any], *,
              urgent: bool = False, lazy: bool = False) -> None:
        """Queue one event of the run (it commits in order with everything else the run
        writes); `urgent` commits it without lingering, `lazy` lets it wait for the run's
        next write that is not (Store.append_event)."""
        self._store.append_event(run_id, kind, payload, urgent=urgent, lazy=lazy)

    def committed(self) -> asyncio.Future[None]:
        """Done once everything queued so far (this run's and others') is committed and
        published, or its batch failed (Store.marker)."""
        return self._store.marker()

    def phase(self, run_id: str, phase: str, state: str, **detail: Any) -> None:
        """Record a phase starting or ending; a phase left open is closed by the run's ending."""
        open_phases = self._open.setdefault(run_id, [])
        if state == "started":
            open_phases.append(phase)
        elif phase in open_phases:
            open_phases.remove(phase)
        # Lazy: it commits with the run's first output, or LAZY_LINGER later (database.py).
        self.event(run_id, "run.phase", {"phase": phase, "state": state, **detail}, lazy=True)

    def update(self, run_id: str, changes: dict[str, Any]) -> None:
        """Queue a row update in order with the run's events; nothing waits for it (the
        terminal write does)."""
        self._store.submit(run_update_op(run_id, changes), lazy=True)

    def status(self, run_id: str, status: RunStatus, previous: RunStatus,
               **extra: Any) -> None:
        """A move between active statuses."""
        changes: dict[str, Any] = {"status": status.value}
        if status == RunStatus.RUNNING:
            changes["started_at"] = utcnow()
        self.update(run_id, changes)
        self.event(run_id, "run.status", {"status": status.value, "previous": previous.value,
                                          **extra}, lazy=True)

    async def write_end(self, run_id: str, ending: RunEnding, *, previous: RunStatus,
                        task_id: str | None, duration_ms: float,
                        then: Callable[[], None] | None = None) -> None:
        """The terminal record in one transaction: the row (status, reason, output, ended_at)
        with the closing events of every open phase, run.output, the complete phase and the
        terminal run.status. It is retried while history is degraded, so a reader never sees
        a terminal status without the rest; `then` (the lock release) runs right after its
        commit."""
        output = ending.output
        stored, shas = await output.stored_parts(
            self._blobs, lambda exc: self._degraded(run_id, exc)) if output else ([], [])
        error: dict[str, Any] | None = None
        if ending.message is not None:
            error = {"kind": "error", "message": ending.message}
            if ending.code:
                error["code"] = ending.code
            stored.append(error)
        detail = ending.detail
        changes: dict[str, Any] = {
            "status": ending.status.value, "reason": ending.reason, "ended_at": utcnow(),
            "duration_ms": duration_ms, "output": stored, "task_id": task_id,
            # The run detail keeps what the failed phase said: log tail included.
            "error": {**error, **{k: detail[k] for k in ERROR_DETAIL_KEYS if k in detail}}
            if error else None}
        if "recommended_run_command" in detail:
            changes["recommended_run_command"] = detail["recommended_run_command"]
        events = [("run.phase", closing)
                  for closing in closing_phases(self._open.pop(run_id, []), ending.status,
                                                ending.reason, ending.message)]
        if stored:
            # As GET /runs/{id} answers them: a cut part names where its whole is served.
            events.append(("run.output", {"parts": output_event_parts(run_id, stored)}))
        events.append(("run.phase", complete_phase(ending.status, ending.reason,
                                                   ending.message, detail)))
        payload: dict[str, Any] = {"status": ending.status.value, "previous": previous.value}
        if ending.reason:
            payload["reason"] = ending.reason
        events.append(("run.status", payload))
        await self._store.write_with_events(
            run_update_op(run_id, changes, shas),
            [(run_id, kind, body) for kind, body in events], then=then)

    def _degraded(self, run_id: str, exc: Exception) -> None:
        log.warning("run %s: a file output could not be stored: %s", run_id, exc)
        self.event(run_id, "diagnostic", {"level": "warning", "code": "history_degraded",
                                          "message": f"a file output could not be stored: {exc}"})
