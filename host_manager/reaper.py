"""Ending a Host generation's processes, and the record of how they ended that GET /host
shows: the last stop step, the last exit code, and the processes of the Host's tree reaped
outside the group kill (descendants that left the group or outlived their parent)."""

from __future__ import annotations

import asyncio
from typing import Any

from llamon_playground.host_manager.environment import ENV_MARKER, marker
from llamon_playground.host_manager.generation import Generation
from llamon_playground.host_manager.orphans import reap_marked
from llamon_playground.host_manager.process import HostProcess

REAPED_KEPT = 20  # reaped processes GET /host lists (the latest)


class Reaper:
    """Stops processes by the bounded sequence (process.py) and remembers how that went."""

    def __init__(self, stop_grace: float) -> None:
        self._stop_grace = stop_grace
        self._reaped: list[dict[str, Any]] = []
        self.last_exit_code: int | None = None
        self.last_stop_step: str | None = None

    async def stop(self, process: HostProcess | None, gen: Generation | None) -> None:
        """Our own stop of a generation (a stop, a restart, a start that failed)."""
        if process is None:
            return
        step = await process.stop(self._stop_grace)
        self.last_stop_step = step.value
        self.last_exit_code = process.returncode
        if gen is not None:
            gen.exit_code = process.returncode
            await self._sweep(gen, "stop")

    async def exited(self, process: HostProcess, gen: Generation, code: int) -> None:
        """A generation exited on its own: reap whatever is left of its group and tree."""
        gen.exit_code = code
        self.last_exit_code = code
        await process.stop(self._stop_grace)
        await self._sweep(gen, "exit")

    async def _sweep(self, gen: Generation, when: str) -> None:
        self.note(await asyncio.to_thread(reap_marked, ENV_MARKER, marker(gen.number), when))

    def note(self, reaped: list[dict[str, Any]]) -> None:
        """Processes reaped elsewhere too (the daemon's boot sweep); the latest are kept."""
        self._reaped = (self._reaped + reaped)[-REAPED_KEPT:]

    def reaped(self) -> list[dict[str, Any]]:
        return list(self._reaped)
