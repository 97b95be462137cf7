"""One run's background execution: validate → save → start/restart → ready → send → complete.

Every phase is reported as a `run.phase` event; every way out of `execute` ends the run
through `ActiveRun.end`, saying what ended its task; `end_rules.decide_end` picks the
status, reason and message from that. The Host is seen through `RunHost`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from llamon_playground.common.heap import give_back_memory
from llamon_playground.common.limits import DEFAULT_LIMITS, Limits
from llamon_playground.daemon.a2a.client import A2AClient, A2AUnavailable, HostOutputTooLarge
from llamon_playground.daemon.a2a.pool import HostConnections
from llamon_playground.daemon.a2a.wire import (
    A2AEvent,
    A2AProtocolError,
    Interface,
    build_message,
    parts_to_wire,
)
from llamon_playground.daemon.errors import ProjectError
from llamon_playground.daemon.introspect import validate_graph
from llamon_playground.daemon.introspect.project_config import (
    ProjectConfig,
    load_project_config,
)
from llamon_playground.daemon.runs.active import ActiveRun, HostLink
from llamon_playground.daemon.runs.end_rules import cancel_ends_task
from llamon_playground.daemon.runs.ending import RunFailure
from llamon_playground.daemon.runs.journal import RunJournal
from llamon_playground.daemon.runs.output import OutputCollector
from llamon_playground.daemon.runs.run_host import RunHost, follow_project
from llamon_playground.daemon.runs.stall_watch import StallWatch
from llamon_playground.daemon.runs.state import Reason, RunStatus
from llamon_playground.daemon.store.blobs import BlobStore
from llamon_playground.host_manager.capture import ENVELOPE_KEY, envelope
from llamon_playground.host_manager.errors import HostUnavailable
from llamon_playground.host_manager.generation import Generation
from llamon_playground.host_manager.last_error import trimmed_tail
from llamon_playground.host_manager.process import HostProcess
from llamon_playground.host_manager.state import HostState
from llamon_playground.host_manager.watch.fingerprint import digest

log = logging.getLogger(__name__)

A2A_CANCEL_TIMEOUT = 3.0
LOG_TAIL_LINES = 20
# How long a run waits for an outside edit to be applied: the burst's quiet period (0.5 s at
# most), then the restart. An edit storm that never pauses is not waited out.
EDIT_WAIT = 10.0
PROBE_TIMEOUT = 2.0


class RunExecutor:
    """Executes one run at a time as its task (the run manager starts it)."""

    def __init__(self, project_dir: Path, journal: RunJournal, blobs: BlobStore,
                 host: RunHost, connections: HostConnections,
                 stall_timeout: float = 30.0, limits: Limits = DEFAULT_LIMITS,
                 trace_context: Callable[[str], dict[str, str]] | None = None) -> None:
        # A run's W3C trace context headers for its A2A request (None: traces are off).
        self._trace_context = trace_context
        self._stall_timeout = stall_timeout
        self._limits = limits
        self._interfaces: dict[int, Interface] = {}
        self._project_dir = project_dir
        self._journal = journal
        self._blobs = blobs
        self._host = host
        # The Ready generation's kept-alive connections: a run reuses the previous run's.
        self._connections = connections

    def _event(self, run: ActiveRun, kind: str, payload: dict[str, Any]) -> None:
        self._journal.event(run.run_id, kind, payload)

    def _log_tail(self, run: ActiveRun) -> list[str]:
        # A traceback's exception line first, the Playground's own frames left out.
        return trimmed_tail(self._host.logs.window(run.log_from, run.generation, LOG_TAIL_LINES))

    def _phase(self, run: ActiveRun, phase: str, state: str, **detail: Any) -> None:
        self._journal.phase(run.run_id, phase, state, **detail)

    # -- the run ----------------------------------------------------------------------------

    async def execute(self, run: ActiveRun) -> None:
        """The run's task: every way out ends the run (a shutdown's cancellation is
        re-raised once it did)."""
        run.began_at_log(self._host.logs.next_offset)  # where this run's diagnostics begin
        try:
            run.advance(RunStatus.PREPARING)
            config = await self._validate(run)
            await self._save(run)
            generation = await self._start_host(run, config)
            run.advance(RunStatus.RUNNING)
            await self._send(run, config, generation)
        except asyncio.CancelledError as cancelled:
            await self._on_cancelled(run, cancelled)
            if cancel_ends_task(run.stop_reason):
                current = asyncio.current_task()
                if current is not None:
                    current.uncancel()
                return
            raise
        except RunFailure as failure:
            await run.end(failure)
        except Exception as exc:  # a bug: still end the run, and say what happened
            log.exception("run %s crashed", run.run_id)
            await run.end(exc)
        finally:
            # Whatever the run's input and output took (a 16 MiB text, a long answer's
            # buffers) is free now: give it back, so the daemon returns to its idle size.
            give_back_memory()

    async def _validate(self, run: ActiveRun) -> ProjectConfig:
        self._phase(run, "validate", "started")
        try:
            config = load_project_config(self._project_dir)
        except ProjectError as exc:
            raise RunFailure(Reason.PROJECT_VALIDATION, str(exc), file="pyproject.toml") from exc
        for rel in run.request.changed_files:
            if rel.endswith(".py"):
                # On the loop: compile() holds the GIL from start to end, so a worker thread
                # would block the loop as long and add its hand-off (a millisecond) to a save.
                problem = _compile_problem(self._project_dir, rel)
                if problem is not None:
                    message = problem.pop("message")
                    raise RunFailure(Reason.PROJECT_VALIDATION, message, **problem)
        # Only a Flow has a graph to read (off the loop); an Agent's run skips the thread hop.
        graph = (await asyncio.to_thread(validate_graph, self._project_dir, config)
                 if config.kind == "flow" else [])
        for diagnostic in graph:
            if diagnostic.severity == "error":
                raise RunFailure(Reason.PROJECT_VALIDATION, diagnostic.message,
                                 **diagnostic.location())
        # Before the save phase: a renamed env file's hash must not be recorded.
        warnings = follow_project(self._host, config, self._project_dir)
        for warning in warnings:
            self._event(run, "diagnostic", {"level": "warning", **warning})
        self._phase(run, "validate", "completed", warnings=[w["code"] for w in warnings])
        return config

    async def _save(self, run: ActiveRun) -> None:
        # The supervisor's fingerprinter: its cache then serves the restart decision too.
        files = {rel: await asyncio.to_thread(self._host.changes.digest, rel)
                 for rel in run.request.changed_files if not self._host.is_env_file(rel)}
        if files or run.request.revision:
            self._phase(run, "save", "completed", revision=run.request.revision, files=files)
        else:
            self._phase(run, "save", "skipped")

    async def _start_host(self, run: ActiveRun, config: ProjectConfig) -> Generation:
        """Start the Host if it is down; restart it once if this run's save changed it."""
        running = self._host.state == HostState.READY
        starting = False  # the start phase is open: it ends before the ready phase begins

        def start_ended(generation: int | None) -> None:
            nonlocal starting
            if starting:
                starting = False
                self._phase(run, "start", "completed", generation=generation)
                self._phase(run, "ready", "started")

        try:
            if running:
                await self._restart_phase(run)
            else:
                run.edits_checked()
                self._phase(run, "start", "started")
                starting = True
            run.host_checked()
            if not starting:
                self._phase(run, "ready", "started")
            # A start's process exists: its phase ends and the wait for Ready begins.
            generation = await self._host.ensure_ready(
                lambda gen: start_ended(gen.number))
            start_ended(generation.number)  # Ready already (another start got there first)
        except HostUnavailable as exc:
            # The ending closes the phases left open (the innermost says why).
            raise RunFailure(exc.reason, exc.message, log_tail=trimmed_tail(exc.log_tail),
                             recommended_run_command=config.recommended_run_command()) from exc
        finally:
            # The supervisor's start goes on without this run once it is cancelled: its
            # process appearing later must not write phases after the run's ending.
            starting = False
        self._phase(run, "ready", "completed", generation=generation.number)
        for warning in self._host.exposure_warnings():  # a Host any web page can drive
            self._event(run, "diagnostic", {"level": "warning", **warning})
        run.sent_to(generation.number)
        self._journal.update(run.run_id, {"generation": generation.number,
                                          "code_fingerprint": digest(generation.fingerprint)})
        return generation

    async def _restart_phase(self, run: ActiveRun) -> None:
        """The Host runs: restart it once if this run's save changed it, and first wait for
        an outside edit the watcher has noticed but not applied yet (sent at once, the run
        would reach the generation about to be replaced and be failed runtime_restarted)."""
        saved = run.request.changed_files
        pending = self._host.pending_edits
        outside = sorted(pending.paths - set(saved))  # a burst of our own save is ours
        if not outside:
            run.edits_checked()  # no await since the look: an edit from now on cuts it off
            if not saved:
                self._phase(run, "restart", "skipped")
                return
        before = self._host.generation
        self._phase(run, "restart", "started", files=saved,
                    **({"outside_edit": outside} if outside else {}))
        if outside:
            await pending.settled(EDIT_WAIT)
            run.edits_checked()
        if saved:
            await self._host.restart_for_save(saved)
        gen = self._host.generation
        if gen is not None and gen is not before:
            self._phase(run, "restart", "completed", generation=gen.number)
        else:
            self._phase(run, "restart", "skipped", detail="files unchanged")

    async def _send(self, run: ActiveRun, config: ProjectConfig, gen: Generation) -> None:
        self._phase(run, "send", "started")
        process = self._host.process
        client = A2AClient(self._connections.session(gen.number), gen.url)
        collected = OutputCollector(self._blobs)
        run.collect_into(collected)
        try:
            interface = self._interfaces.get(gen.number)
            if interface is None:
                # One card fetch per Host generation: its interfaces don't change while it runs.
                interface = await client.interface(gen.card)
                self._interfaces = {gen.number: interface}
            run.reached_host(HostLink(client, interface))
            self._journal.update(run.run_id, {"a2a_version": interface.version})
            wire_parts = parts_to_wire(run.request.parts, interface.version, self._blobs.read)
            message = build_message(wire_parts, interface.version, run.context_id, run.task_id)
            metadata = {**run.request.metadata,
                        ENVELOPE_KEY: envelope(gen.token, run.run_id, gen.number)}
            stall = StallWatch(lambda: client.probe(PROBE_TIMEOUT), self._stall_timeout)
            # A hung Host: stop the run (its cancel path writes the ending).
            watchdog = asyncio.create_task(
                stall.run(lambda: run.stop(Reason.HOST_UNRESPONSIVE)))
            try:
                self._host.note_serving()
                trace = self._trace_context(run.run_id) if self._trace_context else None
                first = FirstOutput(self._journal)
                async for events in client.stream(interface, message, metadata, self._limits,
                                                  trace, hold=first.hold):
                    stall.touch()
                    for event in events:
                        if first.took(self._take(run, collected, event, urgent=first.waiting)):
                            await asyncio.sleep(0)  # its commit starts before the read's rest
            finally:
                watchdog.cancel()
                await asyncio.gather(watchdog, return_exceptions=True)
        except HostOutputTooLarge as exc:
            # A bug in the Host, not an outage: the run ends failed (end_rules decides from
            # the failure); what came before the limit is in the run's collector and kept.
            raise RunFailure(Reason.HOST_OUTPUT_TOO_LARGE, exc.message) from exc
        except (A2AUnavailable, A2AProtocolError) as exc:
            raise await self._broken_stream(run, config, process, exc, gen.url) from exc
        self._phase(run, "send", "completed", task_state=collected.state or "completed")
        await run.end()  # the Host's last task state decides

    def _take(self, run: ActiveRun, collected: OutputCollector, event: A2AEvent, *,
              urgent: bool = False) -> bool:
        """One streamed event: an error ends the run; text chunks become output.delta
        (the first `urgent`). Whether it gave any output."""
        if event.type == "error":
            raise RunFailure(Reason.HOST_ERROR, event.error_message or "Host error",
                             code=str(event.error_code) if event.error_code else None)
        self._note_task(run, event.task_id)
        given = False
        for text, append in collected.add(event):
            self._journal.event(run.run_id, "output.delta",
                                {"text": text, "artifact_id": event.artifact_id,
                                 "append": append}, urgent=urgent and not given)
            given = True
        return given

    def _note_task(self, run: ActiveRun, task_id: str | None) -> None:
        if run.note_task(task_id):
            self._journal.update(run.run_id, {"task_id": task_id})

    async def _broken_stream(self, run: ActiveRun, config: ProjectConfig,
                             process: HostProcess | None, exc: Exception,
                             host_url: str) -> RunFailure:
        # A dead Host is the usual cause: give its exit a moment to be observed.
        if process is not None and await process.wait(0.5):
            await process.drain(0.5)  # its last lines before the tail is kept
        tail = self._log_tail(run)
        if process is None or process.exited.done():
            code = process.returncode if process else None
            return RunFailure(Reason.HOST_EXITED, f"the Host exited during the run (code {code})",
                              log_tail=tail,
                              recommended_run_command=config.recommended_run_command())
        message = str(exc)
        if run.host_link is not None:
            message += card_address_hint(run.host_link.interface.url, host_url)
        return RunFailure(Reason.STREAM_BROKEN, message, log_tail=tail)

    async def _on_cancelled(self, run: ActiveRun, cancelled: asyncio.CancelledError) -> None:
        """What a stop asks of the Host before the run ends (and, for a hung Host, after)."""
        reason = run.stop_reason
        if reason == Reason.USER_CANCELLED:
            await self._cancel_host_task(run)
        if reason == Reason.HOST_UNRESPONSIVE:
            await run.end(cancelled, stall_timeout=self._stall_timeout,
                          log_tail=self._log_tail(run))
            await self._restart_hung_host(run)
        else:
            await run.end(cancelled)

    async def _restart_hung_host(self, run: ActiveRun) -> None:
        """A hung Host would hang the next run too: replace it if it is still the same one."""
        gen = self._host.generation
        if gen is not None and gen.number == run.generation:
            try:
                await self._host.restart()
            except HostUnavailable as exc:
                log.warning("restarting the unresponsive Host failed: %s", exc.message)

    async def _cancel_host_task(self, run: ActiveRun) -> None:
        link = run.host_link
        if link is None or not run.task_id:
            return
        try:
            await link.client.cancel(link.interface, run.task_id, timeout=A2A_CANCEL_TIMEOUT)
        except (A2AUnavailable, A2AProtocolError) as exc:
            log.info("run %s: A2A cancel failed: %s", run.run_id, exc)


class FirstOutput:
    """The run's first output commits at once (urgent) and is published before more of the
    Host's stream is read: a long answer's next tokens, read and parsed while that commit
    runs, held its publication back (the loop busy with them, the writer thread waiting for
    the loop to hear of its commit). A one-output answer is not held: its end is read beside
    the commit, as before."""

    def __init__(self, journal: RunJournal) -> None:
        self._journal = journal
        self.waiting = True  # no output yet: the next one is urgent
        self._committed: asyncio.Future[None] | None = None
        self._more = False  # output came after the first one

    def took(self, gave_output: bool) -> bool:
        """One event taken; `gave_output`: it gave output.delta events. Whether it was the first."""
        if not gave_output:
            return False
        if self.waiting:
            self.waiting = False
            self._committed = self._journal.committed()
            return True
        self._more = True
        return False

    def hold(self) -> asyncio.Future[None] | None:
        """What the Host's stream waits for before it is read on (A2AClient.stream): once,
        the first output's commit, when more output came while it was not published yet."""
        committed = self._committed
        if not self._more or committed is None:
            return None
        self._committed = None  # held once at most: a commit held up does not pace the run
        return None if committed.done() else committed


def card_address_hint(card_url: str, host_url: str) -> str:
    """When the stream broke on an address the Host's own agent card advertised, not the one
    the Playground started it on: say where the address came from and what to fix."""
    card, host = urlsplit(card_url), urlsplit(host_url)
    if (card.hostname, card.port) == (host.hostname, host.port):
        return ""
    return (f". The address {card.scheme}://{card.netloc} came from the Host's agent card "
            f"(its `url` / `supportedInterfaces`), but the Playground started the Host at "
            f"{host_url}: make the card advertise the URL the Host serves on (the "
            "LLAMON_HOST_URL environment variable holds it)")


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
