"""Starting and ending one Host generation: its config, its port and token, its environment
and the process itself, waiting until it is Ready, whether it is shut to web pages; and
stopping it, with the record of how that went that GET /host shows (the last stop step,
the last exit code, the processes of the Host's tree reaped outside the group kill).

The supervisor decides when; this module only does it, and changes no Host state: a launch
that fails raises HostUnavailable and leaves the crash bookkeeping to the supervisor.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

from llamon_playground.host_manager.capture import new_token
from llamon_playground.host_manager.crash_policy import CrashSettings
from llamon_playground.host_manager.environment import ENV_MARKER, KeptPort, child_env, marker
from llamon_playground.host_manager.errors import HostUnavailable
from llamon_playground.host_manager.generation import Generation
from llamon_playground.host_manager.logs import HostLogs, HostOutput
from llamon_playground.host_manager.orphans import reap_marked, record_generation, tree_id
from llamon_playground.host_manager.process import HostProcess
from llamon_playground.host_manager.readiness import (
    exposed_warning,
    exposure,
    probe_session,
    wait_ready,
)
from llamon_playground.host_manager.spawn.spawner import Spawner
from llamon_playground.host_manager.watch.change_policy import ChangePolicy
from llamon_playground.host_manager.watch.fingerprint import WatchRules

log = logging.getLogger(__name__)

LOG_TAIL = 20  # log lines a HostUnavailable carries
REAPED_KEPT = 20  # reaped processes GET /host lists (the latest)
CARD_KEPT = 256 * 1024  # a generation keeps its agent card up to this size (Generation.card)


@dataclass(frozen=True)
class HostConfig:
    """Built by the daemon from its Settings; no defaults here, they are declared there."""

    project_dir: Path
    command: Callable[[], list[str]]  # read at each start: pyproject edits apply next start
    base_env: Mapping[str, str]
    log_path: Path
    record_path: Path  # the generation record a next daemon uses to find an orphan
    capture_socket: str
    rules: WatchRules  # at start; `HostSupervisor.rules` follows pyproject.toml from then on
    crash: CrashSettings
    start_timeout: float
    stop_grace: float
    spawner: Spawner  # cold, or forked from a warm parent (spawn/warm.py)
    log_bytes: int  # Host log text kept in memory (common/limits.py)
    log_file_bytes: int  # host.log's size before it rotates (Settings.host_log_file_bytes)
    log_file_backups: int  # rotated host.log.N files kept


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
        """The latest processes reaped outside the group kill."""
        return list(self._reaped)

    def status(self) -> dict[str, Any]:
        """Its part of GET /host: how the last generation ended, what was reaped lately."""
        return {"last_exit_code": self.last_exit_code, "last_stop_step": self.last_stop_step,
                "reaped": self.reaped()}


async def start_generation(config: HostConfig, logs: HostLogs, changes: ChangePolicy,
                           reaper: Reaper, number: int, port: int,
                           spawned: Callable[[HostProcess, Generation], None],
                           ) -> tuple[HostProcess, Generation, list[dict[str, str]]]:
    """Spawn generation `number` and wait until it is Ready, its fingerprint taken (while
    it starts) and its exposure checked: the process, the generation and its exposure
    warnings. `spawned` is told as soon as there is a process. HostUnavailable when it
    never got Ready; what was spawned is reaped first."""
    scan = asyncio.ensure_future(changes.fingerprint())
    try:
        process, gen = await spawn_generation(config, logs, number, port, new_token())
        spawned(process, gen)
        try:
            async with probe_session() as http:
                card = await wait_ready(process, gen.url, config.start_timeout,
                                        lambda: logs.tail(LOG_TAIL, number), http)
                gen.card = card if len(card) <= CARD_KEPT else None
                gen.fingerprint = await scan
                return process, gen, await exposure_warnings(gen, card, http)
        except HostUnavailable:
            await reaper.stop(process, gen)
            raise
    finally:
        if not scan.done():
            scan.cancel()
        await asyncio.gather(scan, return_exceptions=True)


async def take_port(kept: KeptPort, wait: float, logs: HostLogs) -> int:
    """The project's kept port (waiting up to `wait` s for a previous generation to let go);
    out of descriptors or ports is a failed start, not a stuck one."""
    try:
        return await kept.take(wait)
    except OSError as exc:
        raise HostUnavailable(f"could not find a free loopback port for the Host: {exc}",
                              logs.tail(LOG_TAIL)) from exc


async def spawn_generation(config: HostConfig, logs: HostLogs, number: int, port: int,
                           token: str) -> tuple[HostProcess, Generation]:
    """Spawn generation `number` (not Ready yet) and record it for a next daemon's orphan
    check; HostUnavailable when it could not be started."""
    # A Host that prints its environment must not leak the live token into host.log,
    # GET /host/logs or a failed run's log_tail (stored and exported): masked in the bytes
    # as read, however the Host's writes split it, before anything keeps a line.
    output = HostOutput(token, lambda stream, text: logs.append(number, stream, text))

    argv: list[str] = []
    try:
        argv = config.command()
        env = child_env(config.base_env, generation=number, port=port, token=token,
                        capture_socket=config.capture_socket, tree=tree_id(config.record_path))
        launch = await config.spawner.launch(argv, config.project_dir, env, output.feed)
    except OSError as exc:
        raise HostUnavailable(f"could not start the Host ({argv[:1]}): {exc}",
                              logs.tail(LOG_TAIL)) from exc
    process = launch.process
    gen = Generation(number, process.pid, port, time.time(), process.create_time, token, {},
                     start_mode=launch.mode, start_reason=launch.reason, marker=launch.marker)
    record_generation(config.record_path, gen)
    return process, gen


async def exposure_warnings(gen: Generation, card: bytes, http: aiohttp.ClientSession
                            ) -> list[dict[str, str]]:
    """Try the new generation as a web page would; a `host_exposed` warning when it answers.
    `card`: the agent card it served when it got Ready."""
    found = await exposure(gen.url, card, http)
    if not found:
        return []
    warning = exposed_warning(gen.url, found)
    log.warning("Host generation %d is reachable by any web page: %s. Fix: %s",
                gen.number, "; ".join(found), warning["fix"])
    return [warning]
