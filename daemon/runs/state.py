"""The run state machine: the stored statuses and their moves, the reasons a run ends for
and the one table that says which status each reason ends in, and the in-memory life of
the active run object."""

from __future__ import annotations

from enum import Enum

from llamon_playground.common.contract import ACTIVE_STATUSES, TERMINAL_STATUSES, RunStatus
from llamon_playground.common.wire.words import RunReason as Reason

# The wire declares the reasons (an open set: clients accept reasons they don't know);
# `Reason` is its name here, beside the table of the status each one ends a run in.
__all__ = ["ACTIVE_STATUSES", "TERMINAL_STATUSES", "Reason", "RunStatus"]

_ENDINGS = TERMINAL_STATUSES

TRANSITIONS: dict[RunStatus, frozenset[RunStatus]] = {
    RunStatus.QUEUED: frozenset({RunStatus.PREPARING}) | _ENDINGS,
    RunStatus.PREPARING: frozenset({RunStatus.RUNNING}) | _ENDINGS,
    RunStatus.RUNNING: _ENDINGS,
    # input_required is terminal for the run; the conversation continues in a child run.
    **{status: frozenset() for status in TERMINAL_STATUSES},
}


# The status every reason ends a run in: the executor, the run manager, boot recovery and
# bundle import all read it here. Only `completed` and a plain `input_required` end with no
# reason. `host_unresponsive` is a failure (the Host hung; docs/api.md lists it with the other
# Host faults and the Host-fault drill asserts `failed`), not an interruption.
REASON_STATUS: dict[str, RunStatus] = {
    Reason.PROJECT_VALIDATION: RunStatus.FAILED,
    Reason.RUNTIME_UNAVAILABLE: RunStatus.FAILED,
    Reason.HOST_EXITED: RunStatus.FAILED,
    Reason.HOST_ERROR: RunStatus.FAILED,
    Reason.HOST_REJECTED: RunStatus.FAILED,
    Reason.HOST_UNRESPONSIVE: RunStatus.FAILED,
    Reason.HOST_OUTPUT_TOO_LARGE: RunStatus.FAILED,
    Reason.RUNTIME_RESTARTED: RunStatus.FAILED,
    Reason.STREAM_BROKEN: RunStatus.FAILED,
    Reason.INTERNAL_ERROR: RunStatus.FAILED,
    Reason.HOST_CANCELLED: RunStatus.CANCELLED,
    Reason.USER_CANCELLED: RunStatus.CANCELLED,
    Reason.STUDIO_SHUTDOWN: RunStatus.INTERRUPTED,
    Reason.DAEMON_RESTARTED: RunStatus.INTERRUPTED,
    Reason.IMPORTED: RunStatus.INTERRUPTED,
    Reason.AUTH_REQUIRED: RunStatus.INPUT_REQUIRED,
}

# What an ending without a reason may be.
UNREASONED_STATUSES = frozenset({RunStatus.COMPLETED, RunStatus.INPUT_REQUIRED})


class IllegalTransition(Exception):
    """A bug: some code tried a move the tables here do not allow."""


def check_transition(current: RunStatus, target: RunStatus) -> None:
    if target not in TRANSITIONS[current]:
        raise IllegalTransition(f"run cannot go from {current} to {target}")


def status_for(reason: str) -> RunStatus:
    """The status a run ending for `reason` gets; KeyError for a reason the table lacks."""
    return REASON_STATUS[reason]


class RunLife(Enum):
    """The active run object's own life, beside the status it stores."""

    BEFORE_HOST = "before_host"  # a change to its own changed files is its own save
    HOST_CHECKED = "host_checked"  # past the start/restart phase: its own save was applied
    STOPPING = "stopping"  # stop(reason) was asked for: the ending will carry that reason
    ENDING = "ending"  # end() is writing the terminal record (never cut in half)
    ENDED = "ended"


LIFE_MOVES: dict[RunLife, frozenset[RunLife]] = {
    RunLife.BEFORE_HOST: frozenset({RunLife.HOST_CHECKED, RunLife.STOPPING, RunLife.ENDING}),
    RunLife.HOST_CHECKED: frozenset({RunLife.STOPPING, RunLife.ENDING}),
    RunLife.STOPPING: frozenset({RunLife.ENDING}),
    RunLife.ENDING: frozenset({RunLife.ENDED}),
    RunLife.ENDED: frozenset(),
}


def check_life_move(current: RunLife, target: RunLife) -> None:
    if target not in LIFE_MOVES[current]:
        raise IllegalTransition(f"active run cannot go from {current.value} to {target.value}")
