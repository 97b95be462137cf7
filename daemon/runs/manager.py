"""The run manager: the project-wide single-active-run lock and the background run tasks.

The lock is a plain attribute checked and set with no await in between, so it is atomic on
the event loop for every attached front; the database's partial unique index backs it up.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from llamon_playground.daemon.data.edits import parse_rerun
from llamon_playground.daemon.data.parts import RunRequest, parse_run_request
from llamon_playground.daemon.data.redact import redact_metadata
from llamon_playground.daemon.errors import Conflict, NotFound
from llamon_playground.daemon.runs.active import ActiveRun
from llamon_playground.daemon.runs.executor import RunExecutor
from llamon_playground.daemon.runs.journal import RunJournal
from llamon_playground.daemon.runs.state import Reason, RunStatus
from llamon_playground.daemon.store.blobs import BlobStore
from llamon_playground.daemon.store.database import Store, utcnow
from llamon_playground.daemon.store.event_log import EventHub
from llamon_playground.daemon.store.history import get_run, get_session, insert_run
from llamon_playground.daemon.store.ids import new_context_id, new_run_id

log = logging.getLogger(__name__)

CANCEL_WAIT = 10.0
SHUTDOWN_WAIT = 10.0


class RunManager:
    def __init__(self, store: Store, blobs: BlobStore, hub: EventHub, journal: RunJournal,
                 executor: RunExecutor) -> None:
        self._store = store
        self._blobs = blobs
        self._hub = hub
        self._journal = journal
        self._executor = executor
        self.active: ActiveRun | None = None
        # Every run task, until it is done (it may outlive its run's ending: a hung Host's
        # restart comes after); shutdown cancels and awaits what is left.
        self._tasks: set[asyncio.Task[None]] = set()

    def _release(self, run: ActiveRun) -> None:
        if self.active is run:
            self.active = None

    # -- create / resume / rerun ------------------------------------------------------------

    async def create(self, session_id: str, body: Any) -> dict[str, Any]:
        request = parse_run_request(body)
        session = await get_session(self._store, session_id)
        if session is None:
            raise NotFound(f"no session {session_id}", code="session_not_found")
        return await self._start(session_id, session["context_id"], request)

    async def resume(self, run_id: str, body: Any) -> dict[str, Any]:
        request = parse_run_request(body)
        parent = await get_run(self._store, run_id)
        if parent is None:
            raise NotFound(f"no run {run_id}", code="run_not_found")
        if parent["status"] != RunStatus.INPUT_REQUIRED or parent["resumed_by"]:
            raise Conflict("only a run in input_required that was not resumed yet can resume",
                           code="run_not_resumable", status_now=parent["status"],
                           resumed_by=parent["resumed_by"])
        if not parent["task_id"]:
            raise Conflict("the Host gave this run no task id to resume",
                           code="run_not_resumable")
        return await self._start(parent["session_id"], parent["context_id"], request,
                                 task_id=parent["task_id"], parent_run_id=run_id)

    async def rerun(self, run_id: str, body: Any) -> dict[str, Any]:
        """A new run of a stored input; what the body gives replaces the stored field
        (validated as a new run's, before anything is written), the rest is cloned."""
        edits = parse_rerun(body)
        original = await get_run(self._store, run_id)
        if original is None:
            raise NotFound(f"no run {run_id}", code="run_not_found")
        stored = original["input"]
        request = edits.apply(RunRequest(
            parts=stored["parts"], metadata=stored.get("metadata") or {}, changed_files=[],
            revision=stored.get("revision")))
        return await self._start(original["session_id"], new_context_id(), request,
                                 rerun_of=run_id, label=edits.label,
                                 edited_fields=edits.fields or None)

    async def _start(self, session_id: str, context_id: str, request: RunRequest, *,
                     task_id: str | None = None, parent_run_id: str | None = None,
                     rerun_of: str | None = None, label: str | None = None,
                     edited_fields: list[str] | None = None) -> dict[str, Any]:
        if self.active is not None:
            raise Conflict("another run is active in this project", code="active_run_conflict",
                           active_run_id=self.active.run_id)
        run = ActiveRun(new_run_id(), session_id, context_id, request, journal=self._journal,
                        on_end=self._release, task_id=task_id, parent_run_id=parent_run_id)
        self.active = run  # claimed: no await between the check and this line
        try:
            # Stored metadata is redacted; the Host still gets run.request.metadata as sent.
            stored_input = {**request.stored_input(),
                            "metadata": redact_metadata(request.metadata)}
            self._hub.open_log(run.run_id)
            shas = []
            for pending in request.files:
                pending.part["sha256"] = await self._blobs.put(pending.data)
                shas.append(pending.part["sha256"])
            shas += [p["sha256"] for p in request.parts
                     if p["kind"] == "file" and p.get("sha256") and p["sha256"] not in shas]
            row = {"id": run.run_id, "session_id": session_id, "status": RunStatus.QUEUED.value,
                   "created_at": utcnow(), "context_id": context_id, "task_id": task_id,
                   "parent_run_id": parent_run_id, "rerun_of": rerun_of,
                   "input": stored_input, "label": label, "edited_fields": edited_fields}
            # The row and its first event commit together: the 202 leaves once both are
            # durable, and a run never exists without its queued status.
            await insert_run(self._store, row, shas, resumed_parent=parent_run_id,
                             events=[(run.run_id, "run.status",
                                      {"status": RunStatus.QUEUED.value})])
        except BaseException:
            self._release(run)
            self._hub.drop(run.run_id)
            raise
        task = run.start(self._executor.execute(run))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return {"run_id": run.run_id, "status": RunStatus.QUEUED.value}

    # -- cancel / shutdown ------------------------------------------------------------------

    async def cancel(self, run_id: str) -> dict[str, Any]:
        run = self.active
        if run is None or run.run_id != run_id:
            row = await get_run(self._store, run_id)
            if row is None:
                raise NotFound(f"no run {run_id}", code="run_not_found")
            raise Conflict(f"run {run_id} is {row['status']}, not active", code="run_not_active",
                           status_now=row["status"])
        await self._stop(run, Reason.USER_CANCELLED, CANCEL_WAIT)
        return {"run_id": run_id, "status": run.status.value}

    async def fail_for_restart(self, run: ActiveRun) -> None:
        """An outside edit restarts the Host: the active run ends failed/runtime_restarted."""
        await self._stop(run, Reason.RUNTIME_RESTARTED, CANCEL_WAIT)

    async def _stop(self, run: ActiveRun, reason: str, wait: float) -> None:
        run.stop(reason)
        await run.wait_stopped(wait)

    async def shutdown(self) -> None:
        """Clean stop: the active run ends interrupted/studio_shutdown; no task outlives us."""
        run = self.active
        if run is not None:
            await self._stop(run, Reason.STUDIO_SHUTDOWN, SHUTDOWN_WAIT)
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
