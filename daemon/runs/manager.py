"""The run manager: the project-wide single-active-run lock, the background run tasks, and
runs as clients see them (history, with what memory knows better while a run is active).
`refuse_if_busy` is the lock as every refusal asks it (runs, suite runs, Host stop and
restart, deleting all history).

The lock is a plain attribute checked and set with no await in between, so it is atomic on
the event loop for every attached front; the database's partial unique index backs it up.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llamon_playground.common.ids import new_context_id, new_run_id
from llamon_playground.common.limits import DEFAULT_LIMITS, Limits
from llamon_playground.common.wire import RunAccepted
from llamon_playground.daemon.data.edits import parse_rerun
from llamon_playground.daemon.data.parts import RunRequest, parse_run_request
from llamon_playground.daemon.data.redact import redact_metadata
from llamon_playground.daemon.errors import BadRequest, Conflict, NotFound, StoreError
from llamon_playground.daemon.runs.active import ActiveRun
from llamon_playground.daemon.runs.executor import RunExecutor
from llamon_playground.daemon.runs.journal import RunJournal
from llamon_playground.daemon.runs.state import TERMINAL_STATUSES, Reason, RunStatus
from llamon_playground.daemon.store.blobs import BlobStore
from llamon_playground.daemon.store.database import Store
from llamon_playground.daemon.store.event_log import EventHub
from llamon_playground.daemon.store.history import get_run, get_session, insert_run, run_view
from llamon_playground.daemon.store.history_service import LiveRun, refuse_if_busy
from llamon_playground.daemon.store.records import utcnow
from llamon_playground.host_manager.watch.fingerprint import OutsideProject, project_file

log = logging.getLogger(__name__)

CANCEL_WAIT = 10.0
SHUTDOWN_WAIT = 10.0
# A clean stop gives a run's ending this long to land on a history that refuses writes (a
# full disk): the next start ends the run then (boot recovery), the stop does not hang.
DEGRADED_SHUTDOWN_WAIT = 2.0
SHUTDOWN_POLL = 0.1


@dataclass(frozen=True)
class SuiteTag:
    """Which suite run and case a run belongs to: only a run so tagged starts while that
    suite run holds the project."""

    suite_run_id: str
    case_id: str


class RunManager:
    """The project's runs: starts them (create, resume, rerun) one at a time, cancels them,
    shows them as clients see them, and ends what is left at shutdown. `active` is the run
    holding the lock (None when none does); the run itself releases it when its ending
    commits."""

    def __init__(self, project_dir: Path, store: Store, blobs: BlobStore, hub: EventHub,
                 journal: RunJournal, executor: RunExecutor,
                 limits: Limits = DEFAULT_LIMITS) -> None:
        self._project_dir = project_dir
        self._limits = limits
        self._store = store
        self._blobs = blobs
        self._hub = hub
        self._journal = journal
        self._executor = executor
        self._active: ActiveRun | None = None  # set and checked with no await between
        # A suite run holds the project between its cases too: no other run starts then.
        self._suite_run_id: str | None = None
        # Every run task, until it is done (it may outlive its run's ending: a hung Host's
        # restart comes after); shutdown cancels and awaits what is left.
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def active(self) -> ActiveRun | None:
        """The run holding the project's lock, until its ending commits."""
        return self._active

    @property
    def suite_run_id(self) -> str | None:
        """The suite run holding the project (None when none does)."""
        return self._suite_run_id

    def hold_for_suite(self, suite_run_id: str) -> None:
        """Claim the project for a suite run, or 409 as a run would get it."""
        self.refuse_if_busy("start a suite run")
        self._suite_run_id = suite_run_id

    def release_suite(self, suite_run_id: str) -> None:
        """The suite run is over: the project is free again (a no-op for another id)."""
        if self._suite_run_id == suite_run_id:
            self._suite_run_id = None

    def refuse_if_busy(self, doing: str, suite: SuiteTag | None = None) -> None:
        """409 `active_run_conflict` while a run or a suite run holds the project (`doing`
        says what was refused); a run of the holding suite run's own case passes. Every
        refusal for a busy project asks this (history's `refuse_if_busy` on `live()`)."""
        refuse_if_busy(self.live(), doing, suite.suite_run_id if suite is not None else None)

    def _release(self, run: ActiveRun) -> None:
        if self._active is run:
            self._active = None

    def live(self) -> LiveRun | None:
        """The active run and the blobs its input holds, for deletes to keep clear of."""
        run, held = self.active, self._suite_run_id
        if run is None:
            # Between two cases a suite run still holds the project: delete-all waits too.
            return LiveRun(None, None, frozenset(), held) if held is not None else None
        return LiveRun(run.run_id, run.session_id,
                       frozenset(p["sha256"] for p in run.request.parts if p.get("sha256")),
                       held)

    async def view(self, run_id: str) -> dict[str, Any]:
        """A run as history has it; while it is active and history is behind (degraded
        writes), with the status the daemon itself knows."""
        run = await run_view(self._store, run_id)
        if run is None:
            raise NotFound(f"no run {run_id}", code="run_not_found")
        active = self.active
        if active is not None and active.run_id == run_id and run["status"] != active.status \
                and active.status not in TERMINAL_STATUSES:
            # An ending shows only once committed, with its whole record (output, ended_at).
            run["status"] = active.status.value
            run["history_behind"] = True
        return run

    # -- create / resume / rerun ------------------------------------------------------------

    async def create(self, session_id: str, body: Any) -> RunAccepted:
        """A new run in a session (POST .../runs): queued, its task started."""
        refuse_ways_out(self._project_dir, body)
        request = parse_run_request(body, limits=self._limits)
        if self.live() is not None and await get_session(self._store, session_id) is None:
            # Only on the way to a 409: a missing session still answers 404 first. A free
            # project reads nothing here; the insert looks the session up in its own
            # transaction (one hand-off to the writer, no read before it).
            raise NotFound(f"no session {session_id}", code="session_not_found")
        return await self._start(session_id, None, request)

    async def start_case(self, suite: SuiteTag, session_id: str, context_id: str,
                         stored: dict[str, Any]) -> ActiveRun:
        """One turn of a suite case: a stored input (as Rerun clones it) as a new run in
        `context_id`, while the suite run holds the project; the run itself, so the suite
        can wait for its task."""
        await self._start(session_id, context_id, _stored_request(stored), suite=suite)
        assert self._active is not None  # just claimed, no await since
        return self._active

    async def resume_case(self, suite: SuiteTag, run_id: str,
                          stored: dict[str, Any]) -> ActiveRun:
        """A suite case's stored answer to its previous turn, which asked for input."""
        await self._resume(run_id, _stored_request(stored), suite)
        assert self._active is not None
        return self._active

    async def resume(self, run_id: str, body: Any) -> RunAccepted:
        """A child run that answers a run left in input_required, on the Host's same task."""
        refuse_ways_out(self._project_dir, body)
        return await self._resume(run_id, parse_run_request(body, limits=self._limits), None)

    async def _resume(self, run_id: str, request: RunRequest,
                      suite: SuiteTag | None) -> RunAccepted:
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
                                 task_id=parent["task_id"], parent_run_id=run_id, suite=suite)

    async def rerun(self, run_id: str, body: Any) -> RunAccepted:
        """A new run of a stored input; what the body gives replaces the stored field
        (validated as a new run's, before anything is written), the rest is cloned."""
        edits = parse_rerun(body, self._limits)
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

    async def _start(self, session_id: str, context_id: str | None, request: RunRequest, *,
                     task_id: str | None = None, parent_run_id: str | None = None,
                     rerun_of: str | None = None, label: str | None = None,
                     edited_fields: list[str] | None = None,
                     suite: SuiteTag | None = None) -> RunAccepted:
        self.refuse_if_busy("start a run", suite)
        if self._store.is_open and not await self._store.room_for_a_run():
            # Every accepted run can end: its ending may need the disk's reserve.
            raise StoreError("history's disk is full: no room is kept for a run's ending "
                             "(free space, or delete runs, to run again)")
        self.refuse_if_busy("start a run", suite)  # again: that look at the disk may have waited
        # No context id yet (a new run in a session): the insert gives the session's.
        run = ActiveRun(new_run_id(), session_id, context_id or "", request,
                        journal=self._journal, on_end=self._release, task_id=task_id,
                        parent_run_id=parent_run_id)
        self._active = run  # claimed: no await between the check and this line
        try:
            # Stored metadata is redacted; the Host still gets run.request.metadata as sent.
            stored_input = {**request.stored_input(),
                            "metadata": redact_metadata(request.metadata)}
            self._hub.open_log(run.run_id)
            shas = []
            for pending in request.files:
                pending.part["sha256"] = await self._blobs.put(pending.data)
                shas.append(pending.part["sha256"])
                pending.data = b""  # in the blob store now: the run need not hold it too
            # Files and long texts (a rerun's come with their hash already).
            shas += [p["sha256"] for p in request.parts
                     if p.get("sha256") and p["sha256"] not in shas]
            row = {"id": run.run_id, "session_id": session_id, "status": RunStatus.QUEUED.value,
                   "created_at": utcnow(), "context_id": context_id, "task_id": task_id,
                   "parent_run_id": parent_run_id, "rerun_of": rerun_of,
                   "input": stored_input, "label": label, "edited_fields": edited_fields,
                   "suite_run_id": suite.suite_run_id if suite else None,
                   "case_id": suite.case_id if suite else None}
            # The row and its first event commit together: the 202 leaves once both are
            # durable, and a run never exists without its queued status.
            run.in_context(await insert_run(
                self._store, row, shas, resumed_parent=parent_run_id,
                events=[(run.run_id, "run.status", {"status": RunStatus.QUEUED.value})]))
        except BaseException:
            self._release(run)
            self._hub.drop(run.run_id)
            raise
        task = run.start(self._executor.execute(run))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return {"run_id": run.run_id, "status": RunStatus.QUEUED}

    # -- cancel / shutdown ------------------------------------------------------------------

    async def cancel(self, run_id: str) -> RunAccepted:
        """Stop the active run for `user_cancelled` and wait (bounded) for its ending."""
        run = self._active
        if run is None or run.run_id != run_id:
            row = await get_run(self._store, run_id)
            if row is None:
                raise NotFound(f"no run {run_id}", code="run_not_found")
            raise Conflict(f"run {run_id} is {row['status']}, not active", code="run_not_active",
                           status_now=row["status"])
        await self._stop(run, Reason.USER_CANCELLED, CANCEL_WAIT)
        return {"run_id": run_id, "status": run.status}

    async def fail_for_restart(self, run: ActiveRun) -> None:
        """An outside edit restarts the Host: the active run ends failed/runtime_restarted."""
        await self._stop(run, Reason.RUNTIME_RESTARTED, CANCEL_WAIT)

    async def _stop(self, run: ActiveRun, reason: str, wait: float) -> None:
        run.stop(reason)
        await run.wait_stopped(wait)

    async def shutdown(self) -> str | None:
        """Clean stop: the active run ends interrupted/studio_shutdown; no task outlives us.
        An ending history does not take (a full disk) is waited for only briefly: the id
        of the run left so (the next start ends it), else None."""
        left = None
        run = self._active
        if run is not None:
            run.stop(Reason.STUDIO_SHUTDOWN)
            loop = asyncio.get_running_loop()
            give_up = loop.time() + SHUTDOWN_WAIT
            degraded_since: float | None = None
            while run.task is not None and not run.task.done() and loop.time() < give_up:
                await asyncio.wait({run.task}, timeout=SHUTDOWN_POLL)
                if not self._store.degraded:
                    degraded_since = None
                elif degraded_since is None:
                    degraded_since = loop.time()
                elif loop.time() - degraded_since >= DEGRADED_SHUTDOWN_WAIT:
                    log.warning("run %s: history takes no writes; its ending is left to "
                                "the next start", run.run_id)
                    left = run.run_id
                    break
            if not self._store.degraded:
                await run.wait_stopped(0)  # a task that never began its ending
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        return left


def _stored_request(stored: dict[str, Any]) -> RunRequest:
    """A stored input as a request again: parts (files by hash), metadata, revision."""
    return RunRequest(parts=stored["parts"], metadata=stored.get("metadata") or {},
                      changed_files=[], revision=stored.get("revision"))


def refuse_ways_out(project_dir: Path, body: Any) -> None:
    """400 invalid_changed_files for a changed file that resolves outside the project or is
    not a regular file: nothing outside the project is ever hashed, compiled or recorded.
    (The shape of `changed_files` is the run request parser's to check.)"""
    files = body.get("changed_files") if isinstance(body, dict) else None
    for rel in files if isinstance(files, list) else []:
        if not isinstance(rel, str) or not rel or rel.startswith("/") or "\x00" in rel:
            continue
        try:
            project_file(project_dir, rel)
        except OutsideProject as exc:
            raise BadRequest(f"changed file {exc}", code="invalid_changed_files") from exc
