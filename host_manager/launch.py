"""Starting one Host generation: its config, its port and token, its environment and the
process itself, waiting until it is Ready, and whether it is shut to web pages.

The supervisor decides when; this module only does it, and changes no state: a launch that
fails raises HostUnavailable and leaves the crash bookkeeping to the supervisor.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from llamon_playground.host_manager.capture import new_token
from llamon_playground.host_manager.change_policy import ChangePolicy
from llamon_playground.host_manager.crash_policy import CrashSettings
from llamon_playground.host_manager.environment import child_env, free_port
from llamon_playground.host_manager.errors import HostUnavailable
from llamon_playground.host_manager.fingerprint import WatchRules
from llamon_playground.host_manager.generation import Generation
from llamon_playground.host_manager.logs import HostLogs
from llamon_playground.host_manager.orphans import record_generation, tree_id
from llamon_playground.host_manager.process import HostProcess
from llamon_playground.host_manager.readiness import exposed_warning, exposure, wait_ready
from llamon_playground.host_manager.reaper import Reaper
from llamon_playground.host_manager.spawn.spawner import Spawner

log = logging.getLogger(__name__)

LOG_TAIL = 20  # log lines a HostUnavailable carries
TOKEN_MASK = "[REDACTED capture token]"


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


async def start_generation(config: HostConfig, logs: HostLogs, changes: ChangePolicy,
                           reaper: Reaper, number: int,
                           spawned: Callable[[HostProcess, Generation], None],
                           ) -> tuple[HostProcess, Generation, list[dict[str, str]]]:
    """Spawn generation `number` and wait until it is Ready, its fingerprint taken (while
    it starts) and its exposure checked: the process, the generation and its exposure
    warnings. `spawned` is told as soon as there is a process. HostUnavailable when it
    never got Ready; what was spawned is reaped first."""
    scan = asyncio.ensure_future(changes.fingerprint())
    try:
        process, gen = await spawn_generation(config, logs, number, pick_port(logs),
                                              new_token())
        spawned(process, gen)
        try:
            await wait_ready(process, gen.url, config.start_timeout,
                             lambda: logs.tail(LOG_TAIL, number))
            gen.fingerprint = await scan
            return process, gen, await exposure_warnings(gen)
        except HostUnavailable:
            await reaper.stop(process, gen)
            raise
    finally:
        if not scan.done():
            scan.cancel()
        await asyncio.gather(scan, return_exceptions=True)


def pick_port(logs: HostLogs) -> int:
    """A free loopback port; out of descriptors or ports is a failed start, not a stuck one."""
    try:
        return free_port()
    except OSError as exc:
        raise HostUnavailable(f"could not find a free loopback port for the Host: {exc}",
                              logs.tail(LOG_TAIL)) from exc


async def spawn_generation(config: HostConfig, logs: HostLogs, number: int, port: int,
                           token: str) -> tuple[HostProcess, Generation]:
    """Spawn generation `number` (not Ready yet) and record it for a next daemon's orphan
    check; HostUnavailable when it could not be started."""
    def on_line(stream: str, text: str) -> None:
        # A Host that prints its environment must not leak the live token into host.log,
        # GET /host/logs or a failed run's log_tail (stored and exported): scrubbed here,
        # before anything keeps the line.
        logs.append(number, stream, text.replace(token, TOKEN_MASK))

    argv: list[str] = []
    try:
        argv = config.command()
        env = child_env(config.base_env, generation=number, port=port, token=token,
                        capture_socket=config.capture_socket, tree=tree_id(config.record_path))
        launch = await config.spawner.launch(argv, config.project_dir, env, on_line)
    except OSError as exc:
        raise HostUnavailable(f"could not start the Host ({argv[:1]}): {exc}",
                              logs.tail(LOG_TAIL)) from exc
    process = launch.process
    gen = Generation(number, process.pid, port, time.time(), process.create_time, token, {},
                     start_mode=launch.mode, start_reason=launch.reason, marker=launch.marker)
    record_generation(config.record_path, gen)
    return process, gen


async def exposure_warnings(gen: Generation) -> list[dict[str, str]]:
    """Try the new generation as a web page would; a `host_exposed` warning when it answers."""
    found = await exposure(gen.url)
    if not found:
        return []
    warning = exposed_warning(gen.url, found)
    log.warning("Host generation %d is reachable by any web page: %s. Fix: %s",
                gen.number, "; ".join(found), warning["fix"])
    return [warning]
