"""Suites as the routes see them: create, read, edit and delete suites; start, cancel and read
suite runs; the run-on-save trigger; boot recovery and shutdown.

A suite run holds the project like a run does (`RunManager.hold_for_suite`): starting one
while a run is active, or a run while one holds it, is `409 active_run_conflict` with both
ids. Run on save: when the Host becomes Ready on a new revision (a save or an outside edit),
each suite marked so runs once for that revision; if a run or suite run is active then, it
waits for that one to end, once.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from llamon_playground.common.ids import new_context_id, new_session_id
from llamon_playground.common.wire.suites import SuiteRunStatus
from llamon_playground.daemon.errors import BadRequest, Conflict, NotFound
from llamon_playground.daemon.runs.manager import RunManager
from llamon_playground.daemon.store.blobs import BlobStore
from llamon_playground.daemon.store.database import Store
from llamon_playground.daemon.store.event_log import EventHub
from llamon_playground.daemon.store.history import get_run, unreferenced
from llamon_playground.daemon.store.records import utcnow
from llamon_playground.daemon.store.search.run_line import input_line, parts_line
from llamon_playground.daemon.suites import records
from llamon_playground.daemon.suites.cases import build_case, result_of
from llamon_playground.daemon.suites.ending import (
    TERMINAL,
    Stop,
    decide_suite_end,
    skipped_for,
)
from llamon_playground.daemon.suites.file_sync import SuiteFiles, checked_path, default_path
from llamon_playground.daemon.suites.report import compare_case, summary
from llamon_playground.daemon.suites.requests import (
    parse_create,
    parse_patch,
    parse_save,
    parse_start,
)
from llamon_playground.daemon.suites.runner import STATUS_EVENT, SuiteRunner

log = logging.getLogger(__name__)


class SuiteService:
    """The project's suites and suite runs (one suite run at a time, as for runs)."""

    def __init__(self, store: Store, blobs: BlobStore, hub: EventHub, runs: RunManager, *,
                 revision: Callable[[], str | None], project_dir: Path) -> None:
        self._store = store
        self.files = SuiteFiles(project_dir, store, blobs)
        self._blobs = blobs
        self._hub = hub
        self._runs = runs
        self._revision = revision  # the Ready Host's code fingerprint (None when none is)
        self._runners: dict[str, SuiteRunner] = {}
        self._seen_revision: str | None = None
        self._on_save: asyncio.Task[None] | None = None
        self.saves_started = 0  # suite runs run on save started (GET /suites says it)

    # -- suites -------------------------------------------------------------------------------

    async def create(self, body: Any) -> dict[str, Any]:
        """Validated in full, every case's input and baseline copied, then one write."""
        spec = parse_create(body)
        cases = [await build_case(self._store, c, i) for i, c in enumerate(spec.cases)]
        suite_id = await records.insert_suite(self._store, spec.name, spec.run_on_save, cases)
        return await self.suite(suite_id)

    async def sync_files(self) -> None:
        """Read the project's suite files into history (those of running suites wait)."""
        await self.files.sync({r.suite_id for r in self._runners.values()})

    async def list_suites(self) -> dict[str, Any]:
        """Every suite (file suites with their `file_path`), and the suite files that could
        not be read (`file_errors`: path, line, message)."""
        await self.sync_files()
        return {"suites": await records.list_suites(self._store),
                "runs_on_save": self.saves_started, "file_errors": self.files.errors}

    async def _row(self, suite_id: str) -> dict[str, Any]:
        suite = await records.get_suite(self._store, suite_id)
        if suite is None:
            raise NotFound(f"no suite {suite_id}", code="suite_not_found")
        return suite

    async def suite(self, suite_id: str) -> dict[str, Any]:
        """The suite with its cases (turn counts and baselines, no inputs)."""
        suite = await self._row(suite_id)
        cases = await records.get_cases(self._store, suite_id)
        alive = await records.existing_runs(
            self._store, [i for c in cases for i in c["baseline"].get("run_ids") or []])
        suite["cases"] = [_case_view(c, alive) for c in cases]
        return suite

    async def patch(self, suite_id: str, body: Any) -> dict[str, Any]:
        """Edit a suite's fields; a baseline suite run (ended, of this suite) gives the cases
        their baselines."""
        fields = parse_patch(body)
        await self._row(suite_id)
        source = fields.pop("baseline_suite_run_id", None)
        baselines: dict[str, dict[str, Any]] = {}
        if source is not None:
            run = await records.get_suite_run(self._store, source)
            if run is None or run["suite_id"] != suite_id:
                raise BadRequest(f"no suite run {source} of this suite",
                                 code="unknown_suite_run", suite_run_id=source)
            if run["status"] not in TERMINAL:
                raise Conflict("that suite run has not ended", code="suite_run_active",
                               suite_run_id=source)
            for r in await records.get_results(self._store, source):
                if r["state"] == "done" and r["result"]:
                    baselines[r["case_id"]] = {**r["result"], "source": "suite_run",
                                               "suite_run_id": source}
        await records.update_suite(self._store, suite_id, fields)
        if baselines:
            await records.set_baselines(self._store, baselines)
        suite = await self._row(suite_id)
        if suite.get("file_path") and (fields or baselines):
            # A file suite's file says what history says: the change shows in `git diff`.
            await self.files.write(suite, await records.get_cases(self._store, suite_id),
                                   suite["file_path"])
        return await self.suite(suite_id)

    async def save(self, suite_id: str, body: Any) -> dict[str, Any]:
        """Write the suite as a file in the project (`path`, default
        playground/suites/NAME.json); from then on it is a file suite."""
        doc = parse_save(body)
        suite = await self._row(suite_id)
        rel = checked_path(self.files.project_dir, doc["path"]) if doc.get("path") \
            else suite.get("file_path") or default_path(suite["name"])
        written = await self.files.write(suite, await records.get_cases(self._store, suite_id),
                                         rel)
        if suite.get("file_path") and suite["file_path"] != rel:
            await self.files.remove(suite["file_path"])  # moved: one file a suite
        return {"suite_id": suite_id, **written}

    async def delete(self, suite_id: str) -> dict[str, Any]:
        """Delete a suite that is not running, and the files only it used."""
        await self._row(suite_id)
        if any(r.suite_id == suite_id for r in self._runners.values()):
            raise Conflict("the suite is running; cancel its run first",
                           code="suite_run_active")
        suite = await self._row(suite_id)
        file_removed = await self.files.remove(suite.get("file_path"))
        shas = await records.delete_suite(self._store, suite_id)
        removed = 0
        for sha in await unreferenced(self._store, shas):
            self._blobs.unlink(sha)
            removed += 1
        return {"deleted": suite_id, "blobs_removed": removed, "file_removed": file_removed}

    # -- suite runs ---------------------------------------------------------------------------

    async def start(self, suite_id: str, trigger: str = "manual",
                    body: Any = None) -> dict[str, Any]:
        """A suite run in the background: 202 at once, its progress on its events. `repeat`
        (in the body; default the suite's) runs each case that many times."""
        asked = parse_start(body)
        await self.sync_files()
        suite = await self._row(suite_id)
        repeat = asked.get("repeat") or int(suite.get("repeat") or 1)
        cases = await records.get_cases(self._store, suite_id)
        if not cases:
            raise BadRequest("the suite has no cases", code="empty_suite")
        suite_run_id = records.new_suite_run_id()
        self._runs.hold_for_suite(suite_run_id)  # no await since the check: 409 or ours
        try:
            now = utcnow()
            # Used only when the suite has no session yet: its runs share one.
            session = {"id": new_session_id(), "title": f"suite {suite['name']}"[:500],
                       "context_id": new_context_id(), "created_at": now,
                       "metadata": orjson.dumps({"suite_id": suite_id}).decode()}
            row = {"id": suite_run_id, "suite_id": suite_id, "session_id": None,
                   "status": SuiteRunStatus.RUNNING.value, "trigger": trigger,
                   "created_at": now, "repeat": repeat}
            await records.insert_suite_run(self._store, row, cases, session)
        except BaseException:
            self._runs.release_suite(suite_run_id)
            raise
        runner = SuiteRunner(self._store, self._hub, self._runs, row, cases)
        self._runners[suite_run_id] = runner
        runner.start().add_done_callback(lambda _: self._runners.pop(suite_run_id, None))
        return {"suite_run_id": suite_run_id, "status": SuiteRunStatus.RUNNING.value}

    async def cancel(self, suite_run_id: str) -> dict[str, Any]:
        """Cancel a running suite run and wait (30 s at most) for it to end; Conflict when it is
        not running."""
        runner = self._runners.get(suite_run_id)
        if runner is None:
            run = await self._suite_run(suite_run_id)
            raise Conflict(f"suite run {suite_run_id} is {run['status']}, not running",
                           code="suite_run_not_active", status_now=run["status"])
        await runner.cancel()
        if runner.task is not None:
            await asyncio.wait({runner.task}, timeout=30)
        run = await self._suite_run(suite_run_id)
        return {"suite_run_id": suite_run_id, "status": run["status"]}

    async def _suite_run(self, suite_run_id: str) -> dict[str, Any]:
        run = await records.get_suite_run(self._store, suite_run_id)
        if run is None:
            raise NotFound(f"no suite run {suite_run_id}", code="suite_run_not_found")
        return run

    async def runs_of(self, suite_id: str) -> dict[str, Any]:
        """The suite's runs."""
        await self._row(suite_id)
        return {"suite_runs": await records.list_suite_runs(self._store, suite_id)}

    async def is_terminal(self, suite_run_id: str) -> bool:
        """Whether the suite run has ended."""
        return (await self._suite_run(suite_run_id))["status"] in TERMINAL

    async def report(self, suite_run_id: str) -> dict[str, Any]:
        """The report: every case's row (as far as the run got) and the suite's counts."""
        run = await self._suite_run(suite_run_id)
        suite = await records.get_suite(self._store, run["suite_id"])
        results = await records.report_rows(self._store, suite_run_id)
        baselines = [r["baseline"] or {} for r in results]
        alive = await records.existing_runs(
            self._store, [i for b in baselines for i in b.get("run_ids") or []])
        cases = []
        for r, baseline in zip(results, baselines, strict=True):
            cases.append({"case_id": r["case_id"], "position": r["position"],
                          "kind": r["kind"], "input_excerpt": input_line(r),
                          "turns": r["turn_count"], "started_at": r["run_created_at"],
                          "state": r["state"], "run_ids": r["run_ids"],
                          "skipped_for": r["skipped_for"],
                          "baseline": _baseline_view(baseline, alive), **(r["row"] or {})})
        prints = sorted({str(b["code_fingerprint"]) for b in baselines
                         if b.get("code_fingerprint")})
        return {**run, "suite_name": suite["name"] if suite else None, "cases": cases,
                "summary": summary(results), "baseline_fingerprints": prints,
                "automatic_verdict": None}

    async def case(self, suite_run_id: str, case_id: str) -> dict[str, Any]:
        """One case opened: its baseline and result compared in full (the text diff too)."""
        await self._suite_run(suite_run_id)
        for r in await records.get_results(self._store, suite_run_id):
            if r["case_id"] == case_id:
                if r["state"] != "done" or not r["result"]:
                    raise Conflict(f"case {case_id} is {r['state']}", code="case_not_done",
                                   state=r["state"])
                return {"case_id": case_id, "row": r["row"],
                        "compare": compare_case(r["baseline"] or {}, r["result"])}
        raise NotFound(f"no case {case_id} in suite run {suite_run_id}",
                       code="case_not_found")

    # -- run on save ----------------------------------------------------------------------

    def host_changed(self, status: dict[str, Any]) -> None:
        """The Host's state listener: a Ready Host on a new revision triggers run on save."""
        if status.get("state") != "ready":
            return
        revision = self._revision()
        if revision is None or revision == self._seen_revision:
            return
        first = self._seen_revision is None
        self._seen_revision = revision
        if first:
            return  # the first start of this daemon is no save
        if self._on_save is None or self._on_save.done():
            self._on_save = asyncio.create_task(self._run_on_save(), name="suites-on-save")

    async def _run_on_save(self) -> None:
        """Each suite marked run-on-save, once for the revision now Ready."""
        revision = self._seen_revision
        try:
            for suite in await records.suites_on_save(self._store):
                if suite["last_revision"] == revision:
                    continue
                await self._wait_idle()
                if self._seen_revision != revision:
                    return  # another save came meanwhile: its own trigger runs
                try:
                    started = await self.start(suite["id"], trigger="save")
                except Conflict:
                    log.info("run on save of %s skipped: the project is busy", suite["name"])
                    continue
                self.saves_started += 1
                await records.update_suite(self._store, suite["id"],
                                           {"last_revision": revision})
                runner = self._runners.get(started["suite_run_id"])
                if runner is not None and runner.task is not None:
                    await asyncio.wait({runner.task})
        except Exception:
            log.exception("run on save failed")

    async def _wait_idle(self) -> None:
        """Wait once for the active run or suite run to end."""
        busy = [r.task for r in self._runners.values() if r.task is not None]
        active = self._runs.active
        if active is not None and active.task is not None:
            busy.append(active.task)
        if busy:
            await asyncio.wait(busy)

    # -- boot and shutdown ----------------------------------------------------------------

    async def recover(self) -> None:
        """After boot recovery of runs: a suite run a dead daemon left running is
        `interrupted`; its finished cases keep their results, the case it was in is
        `skipped` (its runs kept, never run again), the rest `skipped`."""
        for run in await records.unfinished_suite_runs(self._store):
            for r in await records.get_results(self._store, run["id"]):
                if r["state"] != "running":
                    continue
                rows = [row for i in r["run_ids"] if (row := await get_run(self._store, i))]
                self._store.submit(records.result_update_op(run["id"], r["case_id"], {
                    "state": "skipped",
                    "result": {**result_of(rows),
                               "skipped_for": skipped_for(decide_suite_end(Stop.ORPHANED))}}))
            end = decide_suite_end(Stop.ORPHANED)
            self._store.submit(records.skip_rest_op(run["id"], skipped_for(end)))
            await self._store.write(records.suite_run_update_op(run["id"], {
                "status": end.status.value, "reason": end.reason, "ended_at": utcnow()}))
            self._store.append_event(run["id"], STATUS_EVENT, {
                "status": end.status.value, "reason": end.reason})
            log.warning("suite run %s was interrupted by a daemon restart", run["id"])
        try:
            await self.sync_files()
        except Exception:  # a suite file is never a reason not to start
            log.exception("reading the project's suite files failed")

    async def shutdown(self) -> None:
        """Before the runs stop: each suite run ends `interrupted`, never starting another
        case."""
        tasks = [t for t in (*(r.task for r in self._runners.values()), self._on_save)
                 if t is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def _baseline_view(baseline: dict[str, Any], alive: set[str]) -> dict[str, Any]:
    ids = baseline.get("run_ids") or []
    return {"run_id": baseline.get("run_id"), "run_ids": ids, "status": baseline.get("status"),
            "source": baseline.get("source"), "suite_run_id": baseline.get("suite_run_id"),
            "code_fingerprint": baseline.get("code_fingerprint"),
            "deleted": bool(ids) and not all(i in alive for i in ids)}


def _case_view(case: dict[str, Any], alive: set[str]) -> dict[str, Any]:
    return {"id": case["id"], "position": case["position"], "kind": case["kind"],
            "source_run_id": case["source_run_id"],
            "source_session_id": case["source_session_id"], "turns": len(case["turns"]),
            "input_excerpt": parts_line(case["turns"][0]["input"]["parts"]
                                        if case["turns"] else []),
            "baseline": _baseline_view(case["baseline"], alive)}
