"""The one active run: it owns its task, can be stopped, and ends exactly once."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from llamon_playground.daemon.a2a.client import A2AClient
from llamon_playground.daemon.a2a.wire import Interface
from llamon_playground.daemon.data.parts import RunRequest
from llamon_playground.daemon.runs.end_rules import decide_end
from llamon_playground.daemon.runs.ending import RunEnding, RunFailure
from llamon_playground.daemon.runs.journal import RunJournal
from llamon_playground.daemon.runs.output import OutputCollector
from llamon_playground.daemon.runs.state import (
    TERMINAL_STATUSES,
    IllegalTransition,
    RunLife,
    RunStatus,
    check_life_move,
    check_transition,
)


@dataclass(frozen=True)
class HostLink:
    """How the send phase reached the Host: what a cancel needs to ask it to stop."""

    client: A2AClient
    interface: Interface


class ActiveRun:
    """The run the daemon is executing: its identity, the status history stores, its own
    life (see RunLife) and what it learnt from the Host. Read through properties; changed
    only through the named transitions below, which the executor calls.

    `end()` is the only way a run ends, and it does not choose the ending: `decide_end`
    does, from this run's stop reason and what the caller says ended the task. A second
    call is a no-op that returns False: the task's own ending and a stopper's fallback
    (`wait_stopped`) can meet, and whichever claims first (with no await before the claim)
    writes the terminal record.
    """

    def __init__(self, run_id: str, session_id: str, context_id: str, request: RunRequest, *,
                 journal: RunJournal, on_end: Callable[[ActiveRun], None],
                 task_id: str | None = None, parent_run_id: str | None = None) -> None:
        self._run_id = run_id
        self._session_id = session_id
        self._context_id = context_id
        self._request = request
        self._task_id = task_id  # the Host's A2A task id (a resume starts with the parent's)
        self._parent_run_id = parent_run_id
        self._status = RunStatus.QUEUED
        self._life = RunLife.BEFORE_HOST
        # Until its restart phase looked at the watcher's pending edit (and waited for it),
        # an outside edit is one this run will be sent after, not one that cuts it off.
        self._edits_checked = False
        self._generation: int | None = None
        self._log_from = 0  # the Host log offset the run began at (its diagnostics' window)
        self._link: HostLink | None = None
        self._task: asyncio.Task[None] | None = None
        # What the Host streamed so far: every ending keeps it (cancel and failures too).
        self._output: OutputCollector | None = None
        self._ending: RunEnding | None = None
        self._started_mono = time.monotonic()
        self._stop_reason: str | None = None  # the STOPPING state's reason
        self._journal = journal
        self._on_end = on_end

    def in_context(self, context_id: str) -> None:
        """The A2A context id history gave the run (a new run takes its session's, looked
        up in the transaction that inserts it); set once, before the run's task starts."""
        self._context_id = context_id

    # -- what it is (read-only) ---------------------------------------------------------------

    @property
    def run_id(self) -> str:
        """The run's id in history."""
        return self._run_id

    @property
    def session_id(self) -> str:
        """The session it belongs to."""
        return self._session_id

    @property
    def context_id(self) -> str:
        """The A2A context id its message is sent in."""
        return self._context_id

    @property
    def request(self) -> RunRequest:
        """What was asked: parts, metadata, the saved files."""
        return self._request

    @property
    def parent_run_id(self) -> str | None:
        """The run it resumes (None for a new run)."""
        return self._parent_run_id

    @property
    def status(self) -> RunStatus:
        """What history stores (the terminal one once ended)."""
        return self._status

    @property
    def life(self) -> RunLife:
        """This object's own state, beside the stored status."""
        return self._life

    @property
    def task(self) -> asyncio.Task[None] | None:
        """Its task, once started."""
        return self._task

    @property
    def task_id(self) -> str | None:
        """The Host's A2A task id, once known."""
        return self._task_id

    @property
    def generation(self) -> int | None:
        """The Host generation the run was sent to."""
        return self._generation

    @property
    def log_from(self) -> int:
        """The Host log offset the run began at: its diagnostics read from there."""
        return self._log_from

    @property
    def host_link(self) -> HostLink | None:
        """How the send phase reached the Host (None before it did)."""
        return self._link

    @property
    def output(self) -> OutputCollector | None:
        """What the Host streamed so far (None before the send phase)."""
        return self._output

    @property
    def ending(self) -> RunEnding | None:
        """What end() recorded."""
        return self._ending

    @property
    def stop_reason(self) -> str | None:
        """The reason of the first stop(), if one came before the ending."""
        return self._stop_reason

    # -- while it runs ------------------------------------------------------------------------

    def start(self, body: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        """Run `body` as this run's task (once)."""
        if self._task is not None:
            body.close()
            raise IllegalTransition(f"run {self._run_id} was started already")
        self._task = asyncio.create_task(body, name=f"run-{self._run_id}")
        return self._task

    def _move(self, life: RunLife) -> None:
        check_life_move(self._life, life)
        self._life = life

    def advance(self, status: RunStatus, **extra: Any) -> None:
        """A move between active statuses (queued → preparing → running); endings go through
        end()."""
        if status in TERMINAL_STATUSES:
            raise IllegalTransition(f"run {self._run_id} ends only through end()")
        check_transition(self._status, status)
        previous, self._status = self._status, status
        self._journal.status(self._run_id, status, previous, **extra)

    def host_checked(self) -> None:
        """Past the start/restart phase: a later change to its files is not its own save."""
        if self._life is RunLife.BEFORE_HOST:  # a stopping run stays stopping
            self._move(RunLife.HOST_CHECKED)

    def edits_checked(self) -> None:
        """The restart phase has waited for the watcher's pending edit (or found none): a
        later outside edit cuts this run off."""
        self._edits_checked = True

    def owns_change(self, changed: set[str]) -> bool:
        """Whether a watched change is this run's own save, which its restart phase applies."""
        return self._life is RunLife.BEFORE_HOST and changed <= set(self._request.changed_files)

    def awaits_edits(self) -> bool:
        """Whether an outside edit now is one this run is sent after: its restart phase has
        not yet looked at the watcher's pending edit, or is waiting for it."""
        return self._life is RunLife.BEFORE_HOST and not self._edits_checked

    def began_at_log(self, offset: int) -> None:
        """The Host log offset at the run's start (earlier lines are other runs')."""
        self._log_from = offset

    def sent_to(self, generation: int) -> None:
        """The Host generation that is Ready for this run."""
        self._generation = generation

    def collect_into(self, output: OutputCollector) -> None:
        """Where the Host's stream is collected from now on; every ending keeps it."""
        self._output = output

    def reached_host(self, link: HostLink) -> None:
        """The send phase reached the Host: a cancel from now on asks it to stop its task."""
        self._link = link

    def note_task(self, task_id: str | None) -> bool:
        """The Host named its task; True when that is news (to be recorded)."""
        if not task_id or task_id == self._task_id:
            return False
        self._task_id = task_id
        return True

    # -- stop and end -------------------------------------------------------------------------

    def stop(self, reason: str) -> None:
        """Ask the run to end for `reason` by cancelling its task. The first stop wins; once
        the ending began, nothing is cancelled (a terminal write is never cut in half)."""
        if self._life not in (RunLife.BEFORE_HOST, RunLife.HOST_CHECKED):
            return
        self._move(RunLife.STOPPING)
        self._stop_reason = reason
        if self._task is not None and not self._task.done():
            self._task.cancel()

    async def wait_stopped(self, timeout: float) -> None:
        """After stop(): wait up to `timeout` for the task to end the run. A run that has not
        begun ending by then (cancelled before its first step, or stuck) is ended here."""
        task = self._task
        if task is not None and not task.done():
            await asyncio.wait({task}, timeout=timeout)
        if self._life is RunLife.STOPPING:
            await self.end()

    async def end(self, error: BaseException | None = None, *,
                  stall_timeout: float | None = None, **detail: Any) -> bool:
        """End the run: `error` is what ended its task (None: the Host's stream ended, and
        its last task state decides). `decide_end` picks the status, reason and message;
        `detail` (and a RunFailure's own) goes with a message only.

        Records the terminal status once, then releases the run lock: right after the
        terminal record commits (before any reader can be told), or when the write gave up.
        """
        if self._life in (RunLife.ENDING, RunLife.ENDED):
            return False
        output = self._output
        decision = decide_end(self._stop_reason, output.state if output else None, error,
                              host_said=output.status_text() if output else "",
                              stall_timeout=stall_timeout)
        code = None
        if isinstance(error, RunFailure):
            code, detail = error.code, {**error.detail, **detail}
        if decision.message is None:
            code, detail = None, {}
        ending = RunEnding(decision.status, decision.reason, decision.message, code, detail,
                           output)
        self._move(RunLife.ENDING)
        self._ending = ending
        released = False

        def release() -> None:
            nonlocal released
            if not released:
                released = True
                self._on_end(self)

        try:
            check_transition(self._status, ending.status)
            previous, self._status = self._status, ending.status
            duration_ms = round((time.monotonic() - self._started_mono) * 1000, 3)
            await self._journal.write_end(self._run_id, ending, previous=previous,
                                          task_id=self._task_id, duration_ms=duration_ms,
                                          then=release)
        finally:
            self._move(RunLife.ENDED)
            release()
        return True
