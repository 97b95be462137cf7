"""The one active run: it owns its task, can be stopped, and ends exactly once."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Callable, Coroutine
from typing import Any

from llamon_playground.daemon.a2a.client import A2AClient
from llamon_playground.daemon.a2a.wire import Interface
from llamon_playground.daemon.data.parts import RunRequest
from llamon_playground.daemon.runs.journal import RunJournal
from llamon_playground.daemon.runs.outcome import Outcome
from llamon_playground.daemon.runs.output import OutputCollector
from llamon_playground.daemon.runs.state import (
    TERMINAL_STATUSES,
    IllegalTransition,
    RunLife,
    RunStatus,
    check_life_move,
    check_transition,
)


class ActiveRun:
    """`status` is what history stores; `life` is this object's own state (see RunLife).

    `end()` is the only way a run ends. A second call is a no-op that returns False: the
    task's own ending and a stopper's fallback (`wait_stopped`) can meet, and whichever
    claims first (with no await before the claim) writes the terminal record.
    """

    def __init__(self, run_id: str, session_id: str, context_id: str, request: RunRequest, *,
                 journal: RunJournal, on_end: Callable[[ActiveRun], None],
                 task_id: str | None = None, parent_run_id: str | None = None) -> None:
        self.run_id = run_id
        self.session_id = session_id
        self.context_id = context_id
        self.request = request
        self.task_id = task_id  # the Host's A2A task id (a resume starts with the parent's)
        self.parent_run_id = parent_run_id
        self.status = RunStatus.QUEUED
        self.life = RunLife.BEFORE_HOST
        self.generation: int | None = None
        self.log_from = 0  # the Host log offset the run began at (its diagnostics' window)
        # Set once the send phase reached the Host: what a cancel needs to ask it to stop.
        self.client: A2AClient | None = None
        self.interface: Interface | None = None
        self.task: asyncio.Task[None] | None = None
        # What the Host streamed so far: every ending keeps it (cancel and failures too).
        self.collected: OutputCollector | None = None
        self.outcome: Outcome | None = None  # what end() recorded
        self.started_mono = time.monotonic()
        self._stop_reason: str | None = None  # the STOPPING state's reason
        self._journal = journal
        self._on_end = on_end

    @property
    def stop_reason(self) -> str | None:
        """The reason of the first stop(), if one came before the ending."""
        return self._stop_reason

    def start(self, body: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        if self.task is not None:
            body.close()
            raise IllegalTransition(f"run {self.run_id} was started already")
        self.task = asyncio.create_task(body, name=f"run-{self.run_id}")
        return self.task

    def _move(self, life: RunLife) -> None:
        check_life_move(self.life, life)
        self.life = life

    # -- while it runs ------------------------------------------------------------------------

    def advance(self, status: RunStatus, **extra: Any) -> None:
        """A move between active statuses (queued → preparing → running); endings go through
        end()."""
        if status in TERMINAL_STATUSES:
            raise IllegalTransition(f"run {self.run_id} ends only through end()")
        check_transition(self.status, status)
        previous, self.status = self.status, status
        self._journal.status(self.run_id, status, previous, **extra)

    def host_checked(self) -> None:
        """Past the start/restart phase: a later change to its files is not its own save."""
        if self.life is RunLife.BEFORE_HOST:  # a stopping run stays stopping
            self._move(RunLife.HOST_CHECKED)

    def owns_change(self, changed: set[str]) -> bool:
        """Whether a watched change is this run's own save, which its restart phase applies."""
        return self.life is RunLife.BEFORE_HOST and changed <= set(self.request.changed_files)

    # -- stop and end -------------------------------------------------------------------------

    def stop(self, reason: str) -> None:
        """Ask the run to end for `reason` by cancelling its task. The first stop wins; once
        the ending began, nothing is cancelled (a terminal write is never cut in half)."""
        if self.life not in (RunLife.BEFORE_HOST, RunLife.HOST_CHECKED):
            return
        self._move(RunLife.STOPPING)
        self._stop_reason = reason
        if self.task is not None and not self.task.done():
            self.task.cancel()

    async def wait_stopped(self, timeout: float) -> None:
        """After stop(): wait up to `timeout` for the task to end the run. A run that has not
        begun ending by then (cancelled before its first step, or stuck) is ended here."""
        task = self.task
        if task is not None and not task.done():
            await asyncio.wait({task}, timeout=timeout)
        if self.life is RunLife.STOPPING and self._stop_reason is not None:
            await self.end(Outcome.of(self._stop_reason))

    async def end(self, outcome: Outcome) -> bool:
        """Record the terminal status once, then release the run lock: right after the
        terminal record commits (before any reader can be told), or when the write gave up.
        A stopped run ends for the stop's reason whatever `outcome` says (its output is
        kept)."""
        if self.life in (RunLife.ENDING, RunLife.ENDED):
            return False
        if self._stop_reason is not None and outcome.reason != self._stop_reason:
            outcome = Outcome.of(self._stop_reason, output=outcome.output)
        if outcome.output is None and self.collected is not None:
            outcome = dataclasses.replace(outcome, output=self.collected)
        self._move(RunLife.ENDING)
        self.outcome = outcome
        released = False

        def release() -> None:
            nonlocal released
            if not released:
                released = True
                self._on_end(self)

        try:
            check_transition(self.status, outcome.status)
            previous, self.status = self.status, outcome.status
            duration_ms = round((time.monotonic() - self.started_mono) * 1000, 3)
            await self._journal.write_end(self.run_id, outcome, previous=previous,
                                          task_id=self.task_id, duration_ms=duration_ms,
                                          then=release)
        finally:
            self._move(RunLife.ENDED)
            release()
        return True
