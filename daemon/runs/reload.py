"""The Host's restarts and stops as the project's runs see them.

An outside edit (`ReloadCoordinator`) restarts the Host when watched files really changed.
The restart a run's own save causes is the run's (its restart phase); the watcher neither
repeats it nor fails that run. A run not yet past its restart phase waits for the edit and
is sent to the new generation (`PendingEdits`). Any other change fails the active run with
`runtime_restarted` first (never retried), then restarts the Host.

A client's start, stop and restart (`HostControl`): stop and restart are refused while the
project is busy, a run or a suite run holding it (`RunManager.refuse_if_busy`, the one
answer every refusal asks), so a Host is never taken away from under a run or between two
cases of a suite run.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from llamon_playground.daemon.errors import ProjectError
from llamon_playground.daemon.introspect.project_config import load_project_config
from llamon_playground.daemon.runs.manager import RunManager
from llamon_playground.daemon.runs.run_host import follow_project
from llamon_playground.host_manager.generation import Generation
from llamon_playground.host_manager.state import HostState
from llamon_playground.host_manager.supervisor import HostSupervisor

log = logging.getLogger(__name__)


class ReloadCoordinator:
    """The watcher's `on_changes`: re-reads pyproject.toml, fails the active run for an
    outside edit, restarts the Host; counts what it did for GET /host's `watch`."""

    def __init__(self, host: HostSupervisor, runs: RunManager) -> None:
        self._host = host
        self._runs = runs
        self.restarts = 0
        self.batches = 0

    def stats(self) -> dict[str, Any]:
        """GET /host's `watch`: batches handled, restarts they caused, and the watched files
        of an outside edit not applied yet."""
        return {"batches": self.batches, "restarts": self.restarts,
                "pending": sorted(self._host.pending_edits.paths)}

    async def on_changes(self, paths: set[str]) -> None:
        """One burst of changed watched files (relative paths)."""
        try:
            if "pyproject.toml" in paths:
                await self._reread_config()
            await self._react()
        finally:
            self.batches += 1  # counted after the reaction, so clients can wait on it

    async def _reread_config(self) -> None:
        """[tool.llamon] changed maybe: watch the env file it names now, and say what its
        backend and its host command need (the watcher and the fingerprints follow)."""
        project_dir = self._host.config.project_dir
        try:
            config = await asyncio.to_thread(load_project_config, project_dir)
        except ProjectError:
            return  # the next run's validate phase reports it
        follow_project(self._host, config, project_dir)

    async def _react(self) -> None:
        host = self._host
        if host.state == HostState.CRASHLOOP:
            log.info("edit while in crashloop: trying the Host again")
            await host.restart_if_changed()
            return
        if host.state not in (HostState.READY, HostState.BACKOFF):
            return
        changed = await host.changed_since_generation()
        if not changed:
            return  # same content saved again, or nothing the Host depends on
        run = self._runs.active
        if run is not None:
            if run.owns_change(changed):
                return  # this run's own save: its restart phase handles it
            if not run.awaits_edits():  # one not sent yet waits for the new generation
                await self._runs.fail_for_restart(run)
        log.info("watched files changed (%s): restarting the Host", ", ".join(sorted(changed)[:5]))
        # Checked again under the supervisor's lock: a run's restart may have applied the
        # change meanwhile. The second scan re-hashes nothing unchanged (mtime/size cache).
        if await host.restart_if_changed():
            self.restarts += 1


class HostControl:
    """POST /host/start, /host/stop and /host/restart: the Host's lifecycle as a client asks
    for it, held to the project's lock (stop and restart wait for no run: they are refused
    while one, or a suite run, holds the project)."""

    def __init__(self, host: HostSupervisor, runs: RunManager) -> None:
        self._host = host
        self._runs = runs

    async def start(self) -> Generation:
        """The Ready generation, started if the Host is down (HostUnavailable if it cannot
        come up)."""
        return await self._host.ensure_ready()

    async def stop(self) -> None:
        """Stop the Host until a next start; 409 while the project is busy."""
        self._runs.refuse_if_busy("stop the Host")
        await self._host.stop()

    async def restart(self) -> Generation:
        """A new generation; 409 while the project is busy."""
        self._runs.refuse_if_busy("restart the Host")
        return await self._host.restart()
