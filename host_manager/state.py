"""The Host lifecycle: an Enum and the moves it may make (one screen, on purpose)."""

from __future__ import annotations

import enum


class HostState(enum.StrEnum):
    """Where the Host is in its lifecycle; the moves allowed between states are in TRANSITIONS."""

    STOPPED = "stopped"
    STARTING = "starting"
    READY = "ready"
    STOPPING = "stopping"
    BACKOFF = "backoff"  # crashed or exited; an automatic restart is pending
    CRASHLOOP = "crashloop"  # crashed too often: no automatic restart until an edit or a start


TRANSITIONS: dict[HostState, frozenset[HostState]] = {
    HostState.STOPPED: frozenset({HostState.STARTING}),
    HostState.STARTING: frozenset({HostState.READY, HostState.BACKOFF, HostState.CRASHLOOP,
                                   HostState.STOPPING}),
    HostState.READY: frozenset({HostState.STOPPING, HostState.BACKOFF, HostState.CRASHLOOP}),
    HostState.BACKOFF: frozenset({HostState.STARTING, HostState.STOPPING}),
    HostState.CRASHLOOP: frozenset({HostState.STARTING, HostState.STOPPING}),
    HostState.STOPPING: frozenset({HostState.STOPPED}),
}


class IllegalHostTransition(Exception):
    """A bug: a lifecycle action tried a move the table does not allow."""


def check(current: HostState, target: HostState) -> None:
    if target not in TRANSITIONS[current]:
        raise IllegalHostTransition(f"Host cannot go from {current} to {target}")
