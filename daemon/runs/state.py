"""The run state machine: the moves between the eight statuses, and the known reasons."""

from __future__ import annotations

from llamon_playground.common.contract import ACTIVE_STATUSES, TERMINAL_STATUSES, RunStatus

__all__ = ["ACTIVE_STATUSES", "TERMINAL_STATUSES", "RunStatus"]

_ENDINGS = TERMINAL_STATUSES

TRANSITIONS: dict[RunStatus, frozenset[RunStatus]] = {
    RunStatus.QUEUED: frozenset({RunStatus.PREPARING}) | _ENDINGS,
    RunStatus.PREPARING: frozenset({RunStatus.RUNNING}) | _ENDINGS,
    RunStatus.RUNNING: _ENDINGS,
    # input_required is terminal for the run; the conversation continues in a child run.
    **{status: frozenset() for status in TERMINAL_STATUSES},
}


class Reason:
    """Known reasons (an open set: clients must accept reasons they don't know)."""

    RUNTIME_UNAVAILABLE = "runtime_unavailable"
    RUNTIME_RESTARTED = "runtime_restarted"
    PROJECT_VALIDATION = "project_validation"
    USER_CANCELLED = "user_cancelled"
    STUDIO_SHUTDOWN = "studio_shutdown"
    DAEMON_RESTARTED = "daemon_restarted"
    HOST_ERROR = "host_error"
    HOST_EXITED = "host_exited"
    STREAM_BROKEN = "stream_broken"
    HOST_REJECTED = "host_rejected"
    HOST_UNRESPONSIVE = "host_unresponsive"
    IMPORTED = "imported"


class IllegalTransition(Exception):
    """A bug: some code tried a move the table above does not allow."""


def check_transition(current: RunStatus, target: RunStatus) -> None:
    if target not in TRANSITIONS[current]:
        raise IllegalTransition(f"run cannot go from {current} to {target}")
