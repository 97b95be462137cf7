"""The Host lifecycle: an Enum and the moves it may make."""

from __future__ import annotations

import enum


class HostState(enum.StrEnum):
    STOPPED = "stopped"
    STARTING = "starting"
    READY = "ready"
    STOPPING = "stopping"
    EXITED = "exited"  # died on its own; the next run (or a start) brings it back
    FAILED = "failed"  # never became Ready


TRANSITIONS: dict[HostState, frozenset[HostState]] = {
    HostState.STOPPED: frozenset({HostState.STARTING}),
    HostState.STARTING: frozenset({HostState.READY, HostState.FAILED, HostState.STOPPING}),
    HostState.READY: frozenset({HostState.STOPPING, HostState.EXITED}),
    HostState.STOPPING: frozenset({HostState.STOPPED}),
    HostState.EXITED: frozenset({HostState.STARTING, HostState.STOPPING}),
    HostState.FAILED: frozenset({HostState.STARTING, HostState.STOPPING}),
}


class IllegalHostTransition(Exception):
    """A bug: a lifecycle action tried a move the table does not allow."""


def check(current: HostState, target: HostState) -> None:
    if target not in TRANSITIONS[current]:
        raise IllegalHostTransition(f"Host cannot go from {current} to {target}")
