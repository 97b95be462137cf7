"""The Host lifecycle: an Enum and the moves it may make (one screen, on purpose)."""

from __future__ import annotations

from llamon_playground.common.wire.words import HostStateName as HostState

__all__ = ["TRANSITIONS", "HostState", "IllegalHostTransition", "check"]

# The states are the API's closed set (the wire declaration spells them once); this module
# says which moves between them are allowed.
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
