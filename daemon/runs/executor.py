"""One run's background execution: validate → save → start/restart → ready → send → complete.

Every phase is reported as a `run.phase` event. The run ends in exactly one terminal status,
written by `finish()`, which is idempotent: the run manager calls it too when a task was
cancelled before it could finish itself.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp

from llamon_playground.daemon.a2a.client import A2AClient, A2AUnavailable
from llamon_playground.daemon.a2a.wire import (
    PAUSED_STATES,
    A2AEvent,
    A2AProtocolError,
    Interface,
    build_message,
    parts_to_wire,
)
from llamon_playground.daemon.errors import ProjectError, StoreError
from llamon_playground.daemon.introspect import validate_graph
from llamon_playground.daemon.introspect.project_config import (
    ProjectConfig,
    backend_warnings,
    load_project_config,
)
from llamon_playground.daemon.runs.active import ActiveRun
from llamon_playground.daemon.runs.output import OutputCollector, store_parts
from llamon_playground.daemon.runs.stall_watch import StallWatch
from llamon_playground.daemon.runs.state import Reason, RunStatus, check_transition
from llamon_playground.daemon.store.blobs import BlobStore
from llamon_playground.daemon.store.database import Store, utcnow
from llamon_playground.daemon.store.history import run_update_op, update_run
from llamon_playground.host_manager.capture import ENVELOPE_KEY, envelope
from llamon_playground.host_manager.errors import HostUnavailable
from llamon_playground.host_manager.process import HostProcess
from llamon_playground.host_manager.state import HostState
from llamon_playground.host_manager.supervisor import Generation, HostSupervisor

log = logging.getLogger(__name__)

A2A_CANCEL_TIMEOUT = 3.0
LOG_TAIL_LINES = 20
FINAL_WRITE_PATIENCE = 60.0
# A cancel for these reasons ends the run and the task; shutdown re-raises instead.
ENDS_WITHOUT_RERAISE = frozenset({Reason.USER_CANCELLED, Reason.RUNTIME_RESTARTED,
                                  Reason.HOST_UNRESPONSIVE})
PROBE_TIMEOUT = 2.0


class RunFailure(Exception):
    """Ends the run `failed` with `reason`; `detail` goes into the failed phase event."""

    def __init__(self, reason: str, message: str, *, code: str | None = None,
                 **detail: Any) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.code = code
        self.detail = detail


class RunExecutor:
    def __init__(self, project_dir: Path, store: Store, blobs: BlobStore, host: HostSupervisor,
                 http: aiohttp.ClientSession, release: Callable[[ActiveRun], None],
                 stall_timeout: float = 30.0) -> None:
        self._stall_timeout = stall_timeout
        self._interfaces: dict[int, Interface] = {}
        self._project_dir = project_dir
        self._store = store
        self._blobs = blobs
        self._host = host
        self._http = http
        self._release = release

    # -- events and status ------------------------------------------------------------------

    def _event(self, run: ActiveRun, kind: str, payload: dict[str, Any]) -> None:
        self._store.append_event(run.run_id, kind, payload)

    def _phase(self, run: ActiveRun, phase: str, state: str, **detail: Any) -> None:
        self._event(run, "run.phase", {"phase": phase, "state": state, **detail})

    def _update(self, run: ActiveRun, changes: dict[str, Any]) -> None:
        """Queue a row update in order with the run's events; nothing waits for it (the
        terminal write does, in _final_write)."""
        self._store.submit(run_update_op(run.run_id, changes))

    async def _set_status(self, run: ActiveRun, status: RunStatus, **extra: Any) -> None:
        check_transition(run.status, status)
        previous = run.status
        run.status = status
        changes: dict[str, Any] = {"status": status.value}
        if status == RunStatus.RUNNING:
            changes["started_at"] = utcnow()
        self._update(run, changes)
        self._event(run, "run.status", {"status": status.value, "previous": previous.value,
                                        **extra})

    # -- the run ----------------------------------------------------------------------------

    async def execute(self, run: ActiveRun) -> None:
        try:
            await self._set_status(run, RunStatus.PREPARING)
            config = await self._validate(run)
            await self._save(run)
            generation = await self._start_host(run, config)
            await self._set_status(run, RunStatus.RUNNING)
            await self._send(run, config, generation)
        except asyncio.CancelledError:
            await self._on_cancelled(run)
            if run.cancel_reason in ENDS_WITHOUT_RERAISE:
                current = asyncio.current_task()
                if current is not None:
                    current.uncancel()
                return
            raise
        except RunFailure as failure:
            await self.finish(run, RunStatus.FAILED, failure.reason, failure=failure)
        except Exception as exc:  # a bug: still end the run, and say what happened
            log.exception("run %s crashed", run.run_id)
            await self.finish(run, RunStatus.FAILED, "internal_error",
                              failure=RunFailure("internal_error", f"internal error: {exc}"))

    async def _validate(self, run: ActiveRun) -> ProjectConfig:
        self._phase(run, "validate", "started")
        try:
            config = load_project_config(self._project_dir)
        except ProjectError as exc:
            raise RunFailure(Reason.PROJECT_VALIDATION, str(exc), file="pyproject.toml") from exc
        for rel in run.request.changed_files:
            if rel.endswith(".py"):
                problem = await asyncio.to_thread(_compile_problem, self._project_dir, rel)
                if problem is not None:
                    message = problem.pop("message")
                    raise RunFailure(Reason.PROJECT_VALIDATION, message, **problem)
        for diagnostic in await asyncio.to_thread(validate_graph, self._project_dir, config):
            if diagnostic.severity == "error":
                raise RunFailure(Reason.PROJECT_VALIDATION, diagnostic.message,
                                 **diagnostic.location())
        warnings = backend_warnings(config)
        self._host.warnings = warnings
        for warning in warnings:
            self._event(run, "diagnostic", {"level": "warning", **warning})
        self._phase(run, "validate", "completed", warnings=[w["code"] for w in warnings])
        return config

    async def _save(self, run: ActiveRun) -> None:
        # The supervisor's fingerprinter: its cache then serves the restart decision too.
        files = {rel: await asyncio.to_thread(self._host.file_digest, rel)
                 for rel in run.request.changed_files}
        if files or run.request.revision:
            self._phase(run, "save", "completed", revision=run.request.revision, files=files)
        else:
            self._phase(run, "save", "skipped")

    async def _start_host(self, run: ActiveRun, config: ProjectConfig) -> Generation:
        """Start the Host if it is down; restart it once if this run's save changed it."""
        running = self._host.state == HostState.READY
        step = "restart" if running else "start"
        try:
            if running and run.request.changed_files:
                self._phase(run, "restart", "started", files=run.request.changed_files)
                restarted = await self._host.restart_for_save(run.request.changed_files)
                if restarted:
                    gen = self._host.generation
                    self._phase(run, "restart", "completed",
                                generation=gen.number if gen else None)
                else:
                    self._phase(run, "restart", "skipped", detail="files unchanged")
            elif running:
                self._phase(run, "restart", "skipped")
            else:
                self._phase(run, "start", "started")
            run.host_checked = True
            self._phase(run, "ready", "started")
            generation = await self._host.ensure_ready()
        except HostUnavailable as exc:
            self._phase(run, step, "failed", message=exc.message)
            raise RunFailure(exc.reason, exc.message, log_tail=exc.log_tail,
                             recommended_run_command=config.recommended_run_command()) from exc
        if not running:
            self._phase(run, "start", "completed", generation=generation.number)
        self._phase(run, "ready", "completed", generation=generation.number)
        run.generation = generation.number
        self._update(run, {"generation": generation.number})
        return generation

    async def _send(self, run: ActiveRun, config: ProjectConfig, gen: Generation) -> None:
        self._phase(run, "send", "started")
        process = self._host.process
        client = A2AClient(self._http, gen.url)
        collected = OutputCollector()
        try:
            interface = self._interfaces.get(gen.number)
            if interface is None:
                # One card fetch per Host generation: its interfaces don't change while it runs.
                interface = await client.interface()
                self._interfaces = {gen.number: interface}
            run.client, run.interface = client, interface
            wire_parts = parts_to_wire(run.request.parts, interface.version, self._blobs.read)
            message = build_message(wire_parts, interface.version, run.context_id, run.task_id)
            metadata = {**run.request.metadata,
                        ENVELOPE_KEY: envelope(gen.token, run.run_id, gen.number)}
            stall = StallWatch(lambda: client.probe(PROBE_TIMEOUT), self._stall_timeout)
            watchdog = asyncio.create_task(stall.run(lambda: self._unresponsive(run)))
            try:
                async for event in client.stream(interface, message, metadata):
                    stall.touch()
                    await self._take(run, collected, event)
            finally:
                watchdog.cancel()
                await asyncio.gather(watchdog, return_exceptions=True)
        except (A2AUnavailable, A2AProtocolError) as exc:
            raise await self._broken_stream(run, config, process, exc) from exc
        except RunFailure as failure:
            failure.detail["output"] = collected
            raise
        await self._complete(run, collected)

    async def _take(self, run: ActiveRun, collected: OutputCollector, event: A2AEvent) -> None:
        """One streamed event: an error ends the run; text chunks become output.delta."""
        if event.type == "error":
            raise RunFailure(Reason.HOST_ERROR, event.error_message or "Host error",
                             code=str(event.error_code) if event.error_code else None)
        self._note_task(run, event.task_id)
        for text in collected.add(event):
            self._event(run, "output.delta", {"text": text, "artifact_id": event.artifact_id})

    def _unresponsive(self, run: ActiveRun) -> None:
        """The stall watch gave up on the Host: end the run (the cancel path writes it)."""
        if run.cancel_reason is None and run.task is not None and not run.finalized:
            run.cancel_reason = Reason.HOST_UNRESPONSIVE
            run.task.cancel()

    def _note_task(self, run: ActiveRun, task_id: str | None) -> None:
        if task_id and task_id != run.task_id:
            run.task_id = task_id
            self._update(run, {"task_id": task_id})

    async def _broken_stream(self, run: ActiveRun, config: ProjectConfig,
                             process: HostProcess | None, exc: Exception) -> RunFailure:
        if process is not None:
            # A dead Host is the usual cause: give its exit a moment to be observed.
            await process.wait(0.5)
        tail = self._host.logs.tail(LOG_TAIL_LINES)
        if process is None or process.exited.done():
            code = process.returncode if process else None
            return RunFailure(Reason.HOST_EXITED, f"the Host exited during the run (code {code})",
                              log_tail=tail,
                              recommended_run_command=config.recommended_run_command())
        return RunFailure(Reason.STREAM_BROKEN, str(exc), log_tail=tail)

    async def _complete(self, run: ActiveRun, collected: OutputCollector) -> None:
        state = collected.state or "completed"
        self._phase(run, "send", "completed", task_state=state)
        if state == "completed":
            await self.finish(run, RunStatus.COMPLETED, None, output=collected)
        elif state in PAUSED_STATES:
            reason = None if state == "input_required" else state
            await self.finish(run, RunStatus.INPUT_REQUIRED, reason, output=collected)
        elif state == "canceled":
            await self.finish(run, RunStatus.CANCELLED, "host_cancelled", output=collected)
        elif state in ("failed", "rejected"):
            reason = Reason.HOST_REJECTED if state == "rejected" else Reason.HOST_ERROR
            await self.finish(run, RunStatus.FAILED, reason, output=collected,
                              failure=RunFailure(reason, f"the Host ended the task {state}"))
        else:
            await self.finish(run, RunStatus.FAILED, Reason.STREAM_BROKEN, output=collected,
                              failure=RunFailure(Reason.STREAM_BROKEN,
                                                 f"the stream closed in state {state!r}"))

    async def _on_cancelled(self, run: ActiveRun) -> None:
        reason = run.cancel_reason or Reason.STUDIO_SHUTDOWN
        if reason == Reason.USER_CANCELLED:
            await self._cancel_host_task(run)
            await self.finish(run, RunStatus.CANCELLED, reason)
        elif reason == Reason.RUNTIME_RESTARTED:
            await self.finish(run, RunStatus.FAILED, reason, failure=RunFailure(
                reason, "a watched file changed during the run; the Host restarted"))
        elif reason == Reason.HOST_UNRESPONSIVE:
            await self.finish(run, RunStatus.FAILED, reason, failure=RunFailure(
                reason, f"the Host sent nothing for {self._stall_timeout:g} s and did not "
                        "answer its agent card; it is being restarted",
                log_tail=self._host.logs.tail(LOG_TAIL_LINES)))
            await self._restart_hung_host(run)
        else:
            await self.finish(run, RunStatus.INTERRUPTED, reason)

    async def _restart_hung_host(self, run: ActiveRun) -> None:
        """A hung Host would hang the next run too: replace it if it is still the same one."""
        gen = self._host.generation
        if gen is not None and gen.number == run.generation:
            try:
                await self._host.restart()
            except HostUnavailable as exc:
                log.warning("restarting the unresponsive Host failed: %s", exc.message)

    async def _cancel_host_task(self, run: ActiveRun) -> None:
        if run.client is None or run.interface is None or not run.task_id:
            return
        try:
            await run.client.cancel(run.interface, run.task_id, timeout=A2A_CANCEL_TIMEOUT)
        except (A2AUnavailable, A2AProtocolError) as exc:
            log.info("run %s: A2A cancel failed: %s", run.run_id, exc)

    # -- the end ----------------------------------------------------------------------------

    def _degraded(self, run: ActiveRun, exc: Exception) -> None:
        log.warning("run %s: a file output could not be stored: %s", run.run_id, exc)
        self._event(run, "diagnostic", {"level": "warning", "code": "history_degraded",
                                        "message": f"a file output could not be stored: {exc}"})

    async def _final_write(self, run: ActiveRun, changes: dict[str, Any],
                           shas: list[str]) -> None:
        """The terminal row must land: while history is degraded, retry with a bound (the
        run lock stays held meanwhile, so no second run starts on a stale record)."""
        deadline = time.monotonic() + FINAL_WRITE_PATIENCE
        delay = 0.05
        while True:
            try:
                await update_run(self._store, run.run_id, changes, shas)
                return
            except StoreError as exc:
                if time.monotonic() > deadline:
                    log.error("run %s: terminal status not recorded: %s", run.run_id, exc)
                    return
            await asyncio.sleep(delay)
            delay = min(delay * 2, 1.0)

    async def finish(self, run: ActiveRun, status: RunStatus, reason: str | None, *,
                     output: OutputCollector | None = None,
                     failure: RunFailure | None = None) -> None:
        """Write the terminal status once: output, complete phase, then run.status."""
        if run.finalized:
            return
        run.finalized = True
        try:
            if output is None and failure is not None:
                output = failure.detail.pop("output", None)
            stored, shas = await store_parts(output.wire_parts() if output else [], self._blobs,
                                             on_blob_error=lambda exc: self._degraded(run, exc))
            error = None
            if failure is not None:
                error = {"kind": "error", "message": failure.message}
                if failure.code:
                    error["code"] = failure.code
                stored.append(error)
            duration_ms = round((time.monotonic() - run.started_mono) * 1000, 3)
            detail = dict(failure.detail) if failure else {}
            changes: dict[str, Any] = {
                "status": status.value, "reason": reason, "ended_at": utcnow(),
                "duration_ms": duration_ms, "output": stored, "task_id": run.task_id,
                # The run detail keeps what the failed phase said: log tail included.
                "error": {**error, **{k: detail[k] for k in ("log_tail", "file", "line", "column")
                                      if k in detail}} if error else None}
            if "recommended_run_command" in detail:
                changes["recommended_run_command"] = detail["recommended_run_command"]
            check_transition(run.status, status)
            previous = run.status
            run.status = status
            await self._final_write(run, changes, shas)
            if stored:
                self._event(run, "run.output", {"parts": stored})
            if failure is not None:
                self._phase(run, "complete", "failed", reason=reason, message=failure.message,
                            **detail)
            else:
                self._phase(run, "complete", "completed", status=status.value)
            payload: dict[str, Any] = {"status": status.value, "previous": previous.value}
            if reason:
                payload["reason"] = reason
            self._event(run, "run.status", payload)
            await self._store.flush()
        finally:
            self._release(run)


def _compile_problem(project_dir: Path, rel: str) -> dict[str, Any] | None:
    path = project_dir / rel
    try:
        source = path.read_bytes()
    except FileNotFoundError:
        return None  # a deleted file is a valid change
    except OSError as exc:
        return {"message": f"{rel}: {exc}", "file": rel}
    try:
        compile(source, str(path), "exec", dont_inherit=True)
    except SyntaxError as exc:
        return {"message": f"{rel}:{exc.lineno}: {exc.msg}", "file": rel, "line": exc.lineno,
                "column": exc.offset}
    except ValueError as exc:
        return {"message": f"{rel}: {exc}", "file": rel}
    return None
