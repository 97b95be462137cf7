"""When a Host exits on its own: restart now, after a back-off, or give up (crashloop);
and the one pending automatic restart itself (`Backoff`).

The numbers come from the daemon's Settings (declared once there); this module has none of
its own. Time is read through an injected clock so the policy can be stepped by hand.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class CrashSettings:
    """The crash and back-off numbers, taken from the daemon's Settings."""

    min_uptime: float  # an exit sooner than this after Ready (or before it) is a crash
    backoff_base: float  # the first back-off; each further consecutive crash doubles it
    backoff_cap: float  # ... up to this
    limit: int  # this many crashes ...
    window: float  # ... within this many seconds: crashloop


@dataclass
class CrashPolicy:
    """Counts a Host's crashes and decides each restart's delay, or crashloop; the clock is
    injected so tests step it by hand."""

    settings: CrashSettings
    clock: Callable[[], float] = time.monotonic
    consecutive: int = 0
    _crashes: deque[float] = field(default_factory=deque)

    def on_exit(self, was_ready: bool, uptime: float, served: bool = False) -> float | None:
        """Delay before the automatic restart, or None for crashloop.

        A Host that was sent a run is not crash-looping, however soon it died: it started
        and answered, and its death is that run's failure (`host_exited`). Whatever ended
        it (its own bug, the OOM killer, someone's SIGKILL), it comes back at once; it
        cannot loop on its own, since the next generation has to be sent a run too.
        Crashloop is for a Host that dies before or soon after Ready, unasked."""
        if was_ready and (served or uptime >= self.settings.min_uptime):
            self.consecutive = 0
            return 0.0  # it ran fine for a while: just bring it back
        now = self.clock()
        self.consecutive += 1
        self._crashes.append(now)
        while self._crashes and now - self._crashes[0] > self.settings.window:
            self._crashes.popleft()
        if len(self._crashes) >= self.settings.limit:
            return None
        delay = self.settings.backoff_base * 2 ** (self.consecutive - 1)
        return float(min(delay, self.settings.backoff_cap))

    def reset(self) -> None:
        """An edit or an explicit start: the next crashes count from zero."""
        self._crashes.clear()
        self.consecutive = 0


Spawn = Callable[[Coroutine[Any, Any, None]], "asyncio.Task[None]"]


class Backoff:
    """The automatic restart a crash schedules: at most one pending, cancelled by a stop, an
    explicit start or a restart (stop wins over it). Its task is made by `spawn`, so the
    supervisor owns it (and awaits it on close)."""

    def __init__(self, spawn: Spawn) -> None:
        self._spawn = spawn
        self._task: asyncio.Task[None] | None = None
        self._until: float | None = None

    @property
    def until(self) -> float | None:
        """When the pending restart fires (wall clock), None when none is pending."""
        return self._until

    @property
    def pending(self) -> asyncio.Task[None] | None:
        """The pending restart's task (None once it fired or was cancelled)."""
        return self._task

    def schedule(self, delay: float, restart: Callable[[], Awaitable[None]]) -> None:
        """Call `restart()` after `delay` seconds unless cancelled meanwhile."""
        self.cancel()
        self._until = time.time() + delay
        self._task = self._spawn(self._after(delay, restart))

    def cancel(self) -> None:
        """Drop the pending restart; a no-op from inside the restart itself."""
        task, self._task = self._task, None
        self._until = None
        if task is not None and task is not asyncio.current_task():
            task.cancel()

    async def _after(self, delay: float, restart: Callable[[], Awaitable[None]]) -> None:
        await asyncio.sleep(delay)
        self._task = None
        await restart()
