"""How a run ends, decided in one place: from what stopped it, the Host's last task state
and the exception that ended its task, to the status, reason and message it is stored with.

A pure function over two tables; `ActiveRun.end` calls it, and nothing else picks the
reason a run's task ends it with. A run no task owns any more (boot recovery finds it still
active) ends as `decide_orphan_end` says, from the same kind of table. The status always
comes from the reason table in `state.py`. Every interrupted run says what interrupted it:
a clean stop of the daemon (`studio_shutdown`, written by the daemon that stops) is told
apart from a daemon that was killed or crashed (`daemon_restarted`, written by the next one).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from llamon_playground.daemon.runs.ending import RunFailure
from llamon_playground.daemon.runs.state import Reason, RunStatus, status_for


@dataclass(frozen=True)
class EndDecision:
    """The status, reason and message a run ends with."""

    status: RunStatus
    reason: str | None = None
    message: str | None = None


@dataclass(frozen=True)
class StopRule:
    """What a stop(reason) does once the run's task sees its cancellation: the message its
    ending carries, and whether the task ends there (True) or re-raises the cancellation to
    its own canceller (the daemon shutting down)."""

    message: str | None
    ends_task: bool


# Keyed by the stop's reason. `{stall}` is the stall timeout, in seconds.
STOP_RULES: dict[str, StopRule] = {
    Reason.USER_CANCELLED: StopRule(None, ends_task=True),
    Reason.RUNTIME_RESTARTED: StopRule(
        "a watched file changed during the run; the Host restarted", ends_task=True),
    Reason.HOST_UNRESPONSIVE: StopRule(
        "the Host sent nothing for {stall} and did not answer its agent card; it is being "
        "restarted", ends_task=True),
    Reason.STUDIO_SHUTDOWN: StopRule(
        "the daemon was stopped (SIGTERM or SIGINT, `llamon-playground stop`) during the run",
        ends_task=False),
}

# A cancellation no stop() asked for comes from the daemon shutting down.
UNASKED_CANCEL = Reason.STUDIO_SHUTDOWN

# Keyed by the Host's last task state when its stream ended: (reason, message). `{state}`
# is the state, `{said}` ": " and the Host's own words when its status message gave any.
TASK_STATE_RULES: dict[str, tuple[str | None, str | None]] = {
    "completed": (None, None),
    "input_required": (None, None),
    "auth_required": (Reason.AUTH_REQUIRED, None),
    "canceled": (Reason.HOST_CANCELLED, None),
    "failed": (Reason.HOST_ERROR, "the Host ended the task failed{said}"),
    "rejected": (Reason.HOST_REJECTED, "the Host ended the task rejected{said}"),
}
# Any other state the stream closed in (working, submitted, unknown ...).
OTHER_TASK_STATE = (Reason.STREAM_BROKEN, "the stream closed in state {state!r}")
UNREASONED = {"completed": RunStatus.COMPLETED, "input_required": RunStatus.INPUT_REQUIRED}


def decide_end(stopped_for: str | None, task_state: str | None,
               error: BaseException | None, *, host_said: str = "",
               stall_timeout: float | None = None) -> EndDecision:
    """The ending of a run.

    `stopped_for`: the reason of the first stop() (None when nobody stopped it).
    `task_state`: the Host's last task state, read when the stream ended (`error` None);
    None means the stream ended without naming one, which is a completed run.
    `error`: what ended the task: None (the stream ended), a CancelledError, a RunFailure
    a run phase raised, or any other exception (a bug).
    """
    if isinstance(error, asyncio.CancelledError):
        stop = stopped_for or UNASKED_CANCEL
        return EndDecision(status_for(stop), stop, _stop_words(stop, stall_timeout))
    if stopped_for is not None:
        # The stop decided the ending, whatever the task said after it (its output is
        # kept); the task's own words are not the stop's, so no message, except that an
        # interrupted run always says what interrupted it.
        status = status_for(stopped_for)
        said_why = _stop_words(stopped_for, stall_timeout) \
            if status == RunStatus.INTERRUPTED else None
        return EndDecision(status, stopped_for, said_why)
    if isinstance(error, RunFailure):
        return EndDecision(error.status, error.reason, error.message)
    if error is not None:
        return EndDecision(RunStatus.FAILED, Reason.INTERNAL_ERROR, f"internal error: {error}")
    state = task_state or "completed"
    reason, template = TASK_STATE_RULES.get(state, OTHER_TASK_STATE)
    said = host_said.strip()
    message = None if template is None else template.format(
        state=state, said=f": {said}" if said else "")
    if reason is None:
        return EndDecision(UNREASONED[state])
    return EndDecision(status_for(reason), reason, message)


# Keyed by the reason boot recovery ends a run it found still active with: the message.
# A daemon that stops cleanly but cannot write the run's ending (history's disk takes no
# writes) leaves a note saying so; without one, the daemon was killed or crashed.
ORPHAN_MESSAGES: dict[str, str] = {
    Reason.DAEMON_RESTARTED: (
        "the daemon running it stopped without ending it (it was killed or crashed); the "
        "next daemon ended it when it started"),
    Reason.STUDIO_SHUTDOWN: (
        "the daemon was stopped during the run while history's disk took no writes; the "
        "next daemon recorded its end when it started"),
    Reason.IMPORTED: "the run was still active in the bundle it was imported from",
}


def decide_orphan_end(reason: str) -> EndDecision:
    """The ending of a run found still active with no task to end it (boot recovery, or
    an imported bundle's)."""
    return EndDecision(status_for(reason), reason, ORPHAN_MESSAGES.get(reason))


def _stop_words(stop: str, stall_timeout: float | None) -> str | None:
    said_why = STOP_RULES.get(stop, StopRule(None, ends_task=False)).message
    if said_why is not None:
        stall = f"{stall_timeout:g} s" if stall_timeout is not None else "too long"
        said_why = said_why.format(stall=stall)
    return said_why


def cancel_ends_task(stopped_for: str | None) -> bool:
    """Whether the run's task, cancelled for this stop, ends quietly once the run ended
    (True), or re-raises its cancellation (a shutdown, or a cancel no stop() asked for)."""
    rule = STOP_RULES.get(stopped_for or UNASKED_CANCEL)
    return rule is not None and rule.ends_task
