"""One suite run: every case against the code on disk, one at a time, each turn a normal run.

The suite run holds the project from its first case to its end (`RunManager.hold_for_suite`),
so no other run slips in between two cases. Each case's turns replay in one new context; a
turn that asked for input is answered with the stored answer (a resume). When a case ends,
its result and its report row are written at once, so a crash keeps every finished case and
no case runs twice.

How it ends is `ending.decide_suite_end`'s to say, from what stopped the loop: the last
case ran, a cancel (its active run is cancelled, the rest `skipped`), the Host restarting on
a new revision (one report never mixes two revisions), a daemon shutdown.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from llamon_playground.common.contract import RunStatus
from llamon_playground.common.ids import new_context_id
from llamon_playground.common.wire.suites import SuiteRunStatus
from llamon_playground.daemon.errors import ApiError
from llamon_playground.daemon.runs.active import ActiveRun
from llamon_playground.daemon.runs.manager import RunManager, SuiteTag
from llamon_playground.daemon.runs.state import Reason
from llamon_playground.daemon.store.database import Store
from llamon_playground.daemon.store.event_log import EventHub
from llamon_playground.daemon.store.history import get_run
from llamon_playground.daemon.store.records import utcnow
from llamon_playground.daemon.suites import records
from llamon_playground.daemon.suites.cases import result_of
from llamon_playground.daemon.suites.ending import (
    Stop,
    SuiteEnd,
    decide_suite_end,
    skipped_for,
)
from llamon_playground.daemon.suites.repeats import CHANGED, repeat_fields
from llamon_playground.daemon.suites.report import case_row

log = logging.getLogger(__name__)

CASE_EVENT = "suite.case"
STATUS_EVENT = "suite.status"
GOES_ON = (RunStatus.COMPLETED.value, RunStatus.INPUT_REQUIRED.value)


class RevisionChanged(Exception):
    """The Host now runs other code than the suite run's first case did."""


class SuiteRunner:
    """Runs one suite run as its task; `cancel()` asks it to stop after cancelling its
    active run. The task owner (the suite service) awaits it."""

    def __init__(self, store: Store, hub: EventHub, runs: RunManager, suite_run: dict[str, Any],
                 cases: list[dict[str, Any]]) -> None:
        self._store = store
        self._hub = hub
        self._runs = runs
        self.suite_run_id: str = suite_run["id"]
        self.suite_id: str = suite_run["suite_id"]
        self._session_id: str = suite_run["session_id"]
        self._repeat: int = int(suite_run.get("repeat") or 1)
        self._cases = cases
        self._revision: str | None = None
        self._cancelled = False
        self._current: ActiveRun | None = None
        self.task: asyncio.Task[None] | None = None

    def _event(self, kind: str, payload: dict[str, Any]) -> None:
        self._store.append_event(self.suite_run_id, kind, payload)

    def _case_event(self, case: dict[str, Any], fields: dict[str, Any]) -> None:
        self._event(CASE_EVENT, {"case_id": case["id"], "position": case["position"],
                                 "kind": case["kind"], **fields})

    def start(self) -> asyncio.Task[None]:
        """Open its live log and start its task (the project is held already)."""
        self._hub.open_log(self.suite_run_id)
        self._event(STATUS_EVENT, {"status": SuiteRunStatus.RUNNING.value,
                                   "cases": len(self._cases)})
        self.task = asyncio.create_task(self._run(), name=f"suite-{self.suite_run_id}")
        return self.task

    async def cancel(self) -> None:
        """Stop: the active case run is cancelled, the cases after it are skipped. Between
        two runs the flag alone does it: the runner looks at it before each start and right
        after (a task cancelled mid-start could leave a half-written run behind)."""
        self._cancelled = True
        await self._cancel_current()

    async def _cancel_current(self) -> None:
        run = self._current
        if run is not None and self._runs.active is run:
            try:
                await self._runs.cancel(run.run_id)
            except ApiError:
                pass  # it ended on its own meanwhile

    async def _run(self) -> None:
        stop = Stop.FINISHED
        try:
            for case in self._cases:
                if self._cancelled:
                    stop = Stop.CANCELLED
                    break
                try:
                    await self._case(case)
                except RevisionChanged:
                    stop = Stop.REVISION_CHANGED
                    break
        except asyncio.CancelledError:  # only a daemon shutdown cancels this task
            await self._end(decide_suite_end(Stop.SHUTDOWN))
            raise
        except Exception as exc:
            log.exception("suite run %s crashed", self.suite_run_id)
            await self._end(decide_suite_end(Stop.CRASHED, error=exc))
            return
        await self._end(decide_suite_end(stop, cancel_asked=self._cancelled))

    async def _end(self, end: SuiteEnd) -> None:
        try:
            self._store.submit(records.skip_rest_op(self.suite_run_id, skipped_for(end)))
            await self._store.write(records.suite_run_update_op(self.suite_run_id, {
                "status": end.status.value, "reason": end.reason, "ended_at": utcnow()}))
            payload: dict[str, Any] = {"status": end.status.value, "reason": end.reason}
            if end.message:
                payload["message"] = end.message
            self._event(STATUS_EVENT, payload)
        finally:
            self._runs.release_suite(self.suite_run_id)

    async def _case(self, case: dict[str, Any]) -> None:
        """The case's turns, `repeat` times over (each repetition in a new context)."""
        case_id = case["id"]
        self._store.submit(records.result_update_op(self.suite_run_id, case_id,
                                                    {"state": "running"}))
        self._case_event(case, {"state": "running"})
        attempts: list[tuple[list[dict[str, Any]], str | None]] = []
        run_ids: list[str] = []
        for _ in range(self._repeat):
            if self._cancelled and attempts:
                break
            attempts.append(await self._attempt(case, run_ids))
        self._finish(case, attempts)

    async def _attempt(self, case: dict[str, Any],
                       run_ids: list[str]) -> tuple[list[dict[str, Any]], str | None]:
        """One repetition: its finished runs, and why it could not start a turn (or None)."""
        case_id = case["id"]
        tag = SuiteTag(self.suite_run_id, case_id)
        context = new_context_id()
        finished: list[dict[str, Any]] = []
        for turn in case["turns"]:
            if self._cancelled:
                break
            previous = finished[-1] if finished else None
            if previous is not None and previous["status"] not in GOES_ON:
                break
            if turn["resume"] and (previous is None
                                   or previous["status"] != RunStatus.INPUT_REQUIRED):
                break  # the answer has no question to answer any more
            try:
                if turn["resume"]:
                    assert previous is not None
                    run = await self._runs.resume_case(tag, previous["id"], turn["input"])
                else:
                    run = await self._runs.start_case(tag, self._session_id, context,
                                                      turn["input"])
            except ApiError as exc:
                return finished, f"{exc.code}: {exc.message}"
            self._current = run
            if self._cancelled:  # asked while this run was being started
                await self._cancel_current()
            run_ids.append(run.run_id)
            self._store.submit(records.result_update_op(
                self.suite_run_id, case_id, {"run_ids": list(run_ids)}))
            self._case_event(case, {"state": "running", "case_run_id": run.run_id})
            try:
                await self._wait(run)
            finally:
                self._current = None
            row = await get_run(self._store, run.run_id)
            if row is not None:
                finished.append(row)
        return finished, None

    async def _wait(self, run: ActiveRun) -> None:
        """Until the run's task is over (a hung Host's restart comes before the next case)."""
        task = run.task
        if task is not None:
            await asyncio.wait({task})

    def _finish(self, case: dict[str, Any],
                attempts: list[tuple[list[dict[str, Any]], str | None]]) -> None:
        case_id = case["id"]
        results = []
        for finished, error in attempts:
            result = result_of(finished)
            if error is not None and not finished:
                result.update(status=RunStatus.FAILED.value, reason="not_started",
                              message=error)
            results.append(result)
        runs = [r for finished, _ in attempts for r in finished]
        result = {**results[0], "run_ids": [r["id"] for r in runs]}
        if len(results) > 1:
            result["repetitions"] = results
        prints = {r.get("code_fingerprint") for r in runs} - {None}
        restarted = any(r.get("reason") == Reason.RUNTIME_RESTARTED for r in runs)
        if self._cancelled and any(r.get("reason") == Reason.USER_CANCELLED for r in runs):
            # Cut short by the suite's own cancel: not a result to compare.
            self._store.submit(records.result_update_op(
                self.suite_run_id, case_id,
                {"state": "skipped", "result": {**result,
                                                "skipped_for": Reason.USER_CANCELLED}}))
            self._case_event(case, {"state": "skipped", "reason": Reason.USER_CANCELLED})
            return
        if self._revision is None and len(prints) == 1 and not restarted:
            self._revision = next(iter(prints))
            self._store.submit(records.suite_run_update_op(
                self.suite_run_id, {"code_fingerprint": self._revision}))
        if restarted or (prints and prints != {self._revision}):
            self._store.submit(records.result_update_op(
                self.suite_run_id, case_id,
                {"state": "skipped", "result": {**result,
                                                "skipped_for": Reason.RUNTIME_RESTARTED}}))
            self._case_event(case, {"state": "skipped", "reason": Reason.RUNTIME_RESTARTED})
            raise RevisionChanged(case_id)
        row = case_row(case["baseline"], results[0])
        row.update(repeat_fields(case["baseline"], results))
        row["changed"] = row["mark"] == CHANGED
        self._store.submit(records.result_update_op(
            self.suite_run_id, case_id, {"state": "done", "result": result, "row": row}))
        self._case_event(case, {"state": "done", "run_ids": result["run_ids"], "row": row})
