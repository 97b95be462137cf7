"""Notices a Host that stopped answering in the middle of a run (hung, or SIGSTOPped).

Silence alone is not a fault (an agent may think for minutes), so after `stall` seconds
without a frame the Host's agent card is probed; only a Host that cannot answer even that
is declared unresponsive.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable


class StallWatch:
    """A run's watch on its Host: every frame that arrives calls `touch`, and only silence plus
    a failed probe counts as a stall."""

    def __init__(self, probe: Callable[[], Awaitable[bool]], stall: float) -> None:
        self._probe = probe
        self._stall = stall
        self._last = time.monotonic()

    def touch(self) -> None:
        self._last = time.monotonic()

    async def run(self, on_stall: Callable[[], None]) -> None:
        """Until cancelled: call `on_stall` once if the Host goes silent and unresponsive."""
        while True:
            idle = time.monotonic() - self._last
            if idle < self._stall:
                await asyncio.sleep(self._stall - idle)
                continue
            if await self._probe():
                self.touch()  # alive, just quiet
                continue
            on_stall()
            return
