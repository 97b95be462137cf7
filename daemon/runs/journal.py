"""A run's record in history: its events, its row updates and the terminal write."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from llamon_playground.daemon.errors import StoreError
from llamon_playground.daemon.runs.outcome import Outcome
from llamon_playground.daemon.runs.output import store_parts
from llamon_playground.daemon.runs.state import RunStatus
from llamon_playground.daemon.store.blobs import BlobStore
from llamon_playground.daemon.store.database import Store, utcnow
from llamon_playground.daemon.store.history import run_update_op, update_run

log = logging.getLogger(__name__)

FINAL_WRITE_PATIENCE = 60.0
ERROR_DETAIL_KEYS = ("log_tail", "file", "line", "column")


class RunJournal:
    def __init__(self, store: Store, blobs: BlobStore) -> None:
        self._store = store
        self._blobs = blobs

    def event(self, run_id: str, kind: str, payload: dict[str, Any]) -> None:
        self._store.append_event(run_id, kind, payload)

    def phase(self, run_id: str, phase: str, state: str, **detail: Any) -> None:
        self.event(run_id, "run.phase", {"phase": phase, "state": state, **detail})

    def update(self, run_id: str, changes: dict[str, Any]) -> None:
        """Queue a row update in order with the run's events; nothing waits for it (the
        terminal write does)."""
        self._store.submit(run_update_op(run_id, changes))

    def status(self, run_id: str, status: RunStatus, previous: RunStatus,
               **extra: Any) -> None:
        """A move between active statuses."""
        changes: dict[str, Any] = {"status": status.value}
        if status == RunStatus.RUNNING:
            changes["started_at"] = utcnow()
        self.update(run_id, changes)
        self.event(run_id, "run.status", {"status": status.value, "previous": previous.value,
                                          **extra})

    async def write_end(self, run_id: str, outcome: Outcome, *, previous: RunStatus,
                        task_id: str | None, duration_ms: float) -> None:
        """The terminal record: the row, then output, complete phase and run.status events."""
        output = outcome.output
        stored, shas = await store_parts(output.wire_parts() if output else [], self._blobs,
                                         on_blob_error=lambda exc: self._degraded(run_id, exc))
        error: dict[str, Any] | None = None
        if outcome.message is not None:
            error = {"kind": "error", "message": outcome.message}
            if outcome.code:
                error["code"] = outcome.code
            stored.append(error)
        detail = outcome.detail
        changes: dict[str, Any] = {
            "status": outcome.status.value, "reason": outcome.reason, "ended_at": utcnow(),
            "duration_ms": duration_ms, "output": stored, "task_id": task_id,
            # The run detail keeps what the failed phase said: log tail included.
            "error": {**error, **{k: detail[k] for k in ERROR_DETAIL_KEYS if k in detail}}
            if error else None}
        if "recommended_run_command" in detail:
            changes["recommended_run_command"] = detail["recommended_run_command"]
        await self._final_write(run_id, changes, shas)
        if stored:
            self.event(run_id, "run.output", {"parts": stored})
        if outcome.message is not None:
            self.phase(run_id, "complete", "failed", reason=outcome.reason,
                       message=outcome.message, **detail)
        else:
            self.phase(run_id, "complete", "completed", status=outcome.status.value)
        payload: dict[str, Any] = {"status": outcome.status.value, "previous": previous.value}
        if outcome.reason:
            payload["reason"] = outcome.reason
        self.event(run_id, "run.status", payload)
        await self._store.flush()

    def _degraded(self, run_id: str, exc: Exception) -> None:
        log.warning("run %s: a file output could not be stored: %s", run_id, exc)
        self.event(run_id, "diagnostic", {"level": "warning", "code": "history_degraded",
                                          "message": f"a file output could not be stored: {exc}"})

    async def _final_write(self, run_id: str, changes: dict[str, Any],
                           shas: list[str]) -> None:
        """The terminal row must land: while history is degraded, retry with a bound (the
        run lock stays held meanwhile, so no second run starts on a stale record)."""
        deadline = time.monotonic() + FINAL_WRITE_PATIENCE
        delay = 0.05
        while True:
            try:
                await update_run(self._store, run_id, changes, shas)
                return
            except StoreError as exc:
                if time.monotonic() > deadline:
                    log.error("run %s: terminal status not recorded: %s", run_id, exc)
                    return
            await asyncio.sleep(delay)
            delay = min(delay * 2, 1.0)
