"""The Host lifecycle: an Enum, the moves it may make, and `Lifecycle`, the machinery the
supervisor drives them with: the state (each move checked against the table, then told to
whoever listens, each listener guarded) and the actions that make the moves (one at a time,
each in a task it owns)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

from llamon_playground.common.wire.words import HostStateName as HostState

__all__ = ["TRANSITIONS", "HostState", "IllegalHostTransition", "Lifecycle", "StateListener",
           "check"]

log = logging.getLogger(__name__)
T = TypeVar("T")

StateListener = Callable[[dict[str, Any]], None]

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
    """Raise IllegalHostTransition unless the table allows `current` → `target`."""
    if target not in TRANSITIONS[current]:
        raise IllegalHostTransition(f"Host cannot go from {current} to {target}")


def listener_name(listener: Callable[..., Any]) -> str:
    """How a log line names a listener: its qualified name (a bound method's with its
    class; a callable object's class)."""
    return getattr(listener, "__qualname__", None) or type(listener).__qualname__


class Lifecycle:
    """The Host's state and the actions that change it.

    `move` checks each change against the table, then tells every listener the status after
    it. A listener that raises is logged by name and the others still hear: none of them
    can leave the supervisor half way through a transition (as jupyter_client's restarter
    guards each of its callbacks). `act` runs one action at a time (a lock) in a task owned
    here and shielded, so a cancelled caller never leaves the Host half started; `spawn`
    owns a background task; `drain` awaits every owned task (the supervisor's close)."""

    def __init__(self, status: Callable[[], dict[str, Any]]) -> None:
        self._status = status  # the snapshot listeners get, taken after the move
        self._state = HostState.STOPPED
        self._listeners: list[StateListener] = []
        self.lock = asyncio.Lock()  # held by the running action
        self._tasks: set[asyncio.Task[Any]] = set()

    @property
    def state(self) -> HostState:
        """Where the Host is now."""
        return self._state

    def listen(self, listener: StateListener) -> None:
        """Call `listener(status)` after every move."""
        self._listeners.append(listener)

    def move(self, target: HostState) -> None:
        """Go to `target` (IllegalHostTransition if the table forbids it), then tell."""
        check(self._state, target)
        log.info("host %s -> %s", self._state.value, target.value)
        self._state = target
        snapshot = self._status()
        for listener in self._listeners:
            try:
                listener(snapshot)
            except Exception:
                log.exception("Host state listener %s failed on %s; the Host goes on",
                              listener_name(listener), target.value)

    async def act(self, fn: Callable[[], Awaitable[T]]) -> T:
        """Run `fn()` under the lock, in an owned task its caller's cancel does not stop."""
        async def serialized() -> T:
            async with self.lock:
                return await fn()
        return await asyncio.shield(self.spawn(serialized()))

    def spawn(self, coro: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
        """A task owned here: `drain` awaits it."""
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def drain(self) -> None:
        """Until every owned task is done (including those they start meanwhile)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)
