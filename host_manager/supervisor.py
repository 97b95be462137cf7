"""The Host supervisor: the one owner of start, stop and restart.

Every lifecycle action runs in a task the supervisor owns, one at a time (a lock), so a
cancelled caller never leaves the Host half started. Exits are classified by CrashPolicy:
restart now, restart after a back-off, or stop trying (crashloop) until an edit or an
explicit start. Stop wins: it cancels a pending back-off.

The state changes only in the named transitions at the end (`_starting`, `_ready`,
`_stopping`, `_stopped`, `_crashed`), each checked against the table in `state.py`. The
rest is delegated, one job per module: the child's environment (`environment`), readiness
(`readiness`), the orphan record (`orphans`), restart on a file change (`change_policy`),
back-off and crashloop (`crash_policy`), the process itself (`process`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from llamon_playground.host_manager.capture import new_token
from llamon_playground.host_manager.change_policy import (
    CRASHLOOP_CLEARED,
    ChangePolicy,
    restart_wanted,
)
from llamon_playground.host_manager.crash_policy import CrashPolicy, CrashSettings
from llamon_playground.host_manager.environment import ENV_MARKER, child_env, free_port, marker
from llamon_playground.host_manager.errors import HostUnavailable
from llamon_playground.host_manager.fingerprint import Fingerprint, WatchRules
from llamon_playground.host_manager.generation import Generation
from llamon_playground.host_manager.logs import HostLogs
from llamon_playground.host_manager.orphans import (
    forget_generation,
    reap_marked,
    record_generation,
    tree_id,
)
from llamon_playground.host_manager.process import HostProcess
from llamon_playground.host_manager.readiness import exposed_warning, exposure, wait_ready
from llamon_playground.host_manager.spawn.spawner import Spawner
from llamon_playground.host_manager.state import HostState, check

__all__ = ["Generation", "HostConfig", "HostSupervisor"]

log = logging.getLogger(__name__)
T = TypeVar("T")

LOG_TAIL = 20  # log lines a HostUnavailable carries
TOKEN_MASK = "[REDACTED capture token]"
REAPED_KEPT = 20  # reaped processes GET /host lists (the latest)


@dataclass(frozen=True)
class HostConfig:
    """Built by the daemon from its Settings; no defaults here, they are declared there."""

    project_dir: Path
    command: Callable[[], list[str]]  # read at each start: pyproject edits apply next start
    base_env: Mapping[str, str]
    log_path: Path
    record_path: Path  # the generation record a next daemon uses to find an orphan
    capture_socket: str
    rules: WatchRules
    crash: CrashSettings
    start_timeout: float
    stop_grace: float
    spawner: Spawner  # cold, or forked from a warm parent (spawn/warm.py)
    log_bytes: int  # Host log text kept in memory (common/limits.py)


class HostSupervisor:
    def __init__(self, config: HostConfig) -> None:
        self.config = config
        self.logs = HostLogs(config.log_path, max_bytes=config.log_bytes)
        self.state = HostState.STOPPED
        self.generation: Generation | None = None
        self.warnings: list[dict[str, str]] = []  # the project's (set by the daemon)
        self.exposure: list[dict[str, str]] = []  # the Ready generation's `host_exposed`
        self.listeners: list[Callable[[dict[str, Any]], None]] = []
        # Processes of the Host tree ended outside the group kill (stop, exit, boot).
        self.reaped: list[dict[str, Any]] = []
        self._served: int | None = None  # the last generation a run was sent to
        self._process: HostProcess | None = None
        self._changes = ChangePolicy(config.rules)
        self._policy = CrashPolicy(config.crash)
        self._lock = asyncio.Lock()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._backoff: asyncio.Task[None] | None = None
        self._backoff_until: float | None = None
        self._generations = 0
        self._restarts = 0
        self._last_exit_code: int | None = None
        self._last_stop_step: str | None = None
        self._closed = False

    # -- status ------------------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        gen = self.generation
        alive = gen is not None and gen.exit_code is None and self._process is not None
        number = (self._generations if self.state == HostState.STARTING
                  else gen.number if gen else None)
        return {"state": self.state.value,
                "generation": number,
                "pid": gen.pid if gen and alive else None,
                "url": gen.url if gen and self.state == HostState.READY else None,
                "started_at": gen.started_at if gen else None,
                "ready_at": gen.ready_at if gen else None,
                "restarts": self._restarts, "crashes": self._policy.consecutive,
                "last_exit_code": self._last_exit_code,
                "last_stop_step": self._last_stop_step,
                "backoff_until": self._backoff_until if self.state == HostState.BACKOFF
                else None,
                "start_mode": gen.start_mode if gen else None,
                "start_reason": gen.start_reason if gen else None,
                "warm_parent": self.config.spawner.describe(),
                "warnings": [*self.warnings, *self.exposure],
                "reaped": list(self.reaped)}

    @property
    def process(self) -> HostProcess | None:
        return self._process

    def note_serving(self) -> None:
        """A run is sent to the Ready generation: once it served, its death is not a crash
        loop (CrashPolicy.on_exit)."""
        if self.generation is not None:
            self._served = self.generation.number

    @property
    def capture_token(self) -> str | None:
        gen = self.generation
        return gen.token if gen is not None and self.state == HostState.READY else None

    # -- public actions ----------------------------------------------------------------------

    async def ensure_ready(self) -> Generation:
        """The Ready generation; an explicit start if the Host is not running."""
        return await self._action(self._ensure_ready)

    async def start(self) -> Generation:
        return await self._action(self._ensure_ready)

    async def restart(self) -> Generation:
        return await self._action(self._restart)

    async def stop(self) -> None:
        self._cancel_backoff()  # stop wins over a pending automatic restart
        await self._action(self._stop)

    async def restart_for_save(self, changed_files: list[str]) -> bool:
        """Restart once if the saved files differ from what this generation started with."""
        return await self._action(lambda: self._restart_for_save(changed_files))

    async def restart_if_changed(self) -> set[str]:
        """The watcher's restart: only when the watched files differ from the generation's."""
        return await self._action(self._restart_if_changed)

    def file_digest(self, rel: str) -> str | None:
        """sha256 of a project file (None when it is gone), cached by mtime and size."""
        return self._changes.digest(rel)

    def is_env_file(self, rel: str) -> bool:
        """The project's env file holds secrets: its hash is never recorded (a hash of a
        short secret can be tested against guesses)."""
        return rel == self.config.rules.env_file

    async def changed_since_generation(self) -> set[str]:
        gen = self.generation
        return set() if gen is None else await self._changes.changed_since(gen.fingerprint)

    async def close(self) -> None:
        """Daemon shutdown: cancel the back-off, let actions finish, stop the Host for good."""
        self._closed = True
        self._cancel_backoff()
        async with self._lock:  # waits for a running action (a start) to finish first
            await self._stop()
        while self._tasks:  # exit watchers wake now that the process is gone
            await asyncio.gather(*list(self._tasks), return_exceptions=True)
        await self.config.spawner.close()
        self.logs.close()

    async def _action(self, fn: Callable[[], Awaitable[T]]) -> T:
        async def serialized() -> T:
            async with self._lock:
                return await fn()
        return await asyncio.shield(self._spawn(serialized()))

    # -- actions (run under the lock) ---------------------------------------------------------

    async def _ensure_ready(self) -> Generation:
        if self.state == HostState.READY and self.generation is not None:
            return self.generation
        self._cancel_backoff()
        self._policy.reset()  # an explicit start clears a crashloop
        return await self._start()

    async def _restart(self) -> Generation:
        self._cancel_backoff()
        self._restarts += 1
        return await self._start()

    async def _restart_for_save(self, changed_files: list[str]) -> bool:
        gen = self.generation
        if self.state != HostState.READY or gen is None:
            return False
        if not await self._changes.saved_changes(changed_files, gen.fingerprint):
            return False
        await self._restart()
        return True

    async def _restart_if_changed(self) -> set[str]:
        changed = await self.changed_since_generation()
        if not restart_wanted(self.state, changed):
            return set()
        if self.state == HostState.CRASHLOOP:
            self._policy.reset()  # an edit clears a crashloop
        try:
            await self._restart()
        except HostUnavailable:
            pass  # recorded as a crash; the status tells
        return changed or {CRASHLOOP_CLEARED}

    async def _start(self) -> Generation:
        if self.state == HostState.READY:
            # A restart: the old generation gets its SIGTERM now and is reaped while the new
            # one starts (it binds a new port), so a restart costs about one start, not a
            # stop plus a start. The restart answers once the new one is Ready, not when the
            # old one is gone (a warm start is quicker than a graceful shutdown): the reaping
            # is a task of ours (`close` awaits it) that records the stop step when done.
            self._retire()
        elif self.state != HostState.STOPPED:
            await self._stop()  # reap what is left of the previous generation first
        return await self._spawn_generation()

    def _retire(self) -> asyncio.Task[None]:
        self._cancel_backoff()
        gen = self.generation
        process = self._stopping()
        self._stopped()
        return self._spawn(self._reap(process, gen))

    async def _stop(self) -> None:
        self._cancel_backoff()
        if self.state == HostState.STOPPED:
            return
        process = self._stopping()
        try:
            await self._reap(process, self.generation)
        finally:
            forget_generation(self.config.record_path)
            self._stopped()

    async def _spawn_generation(self) -> Generation:
        number = self._starting()
        try:
            port = free_port()
        except OSError as exc:  # out of descriptors or ports: a failed start, not a stuck one
            self._crashed(was_ready=False, uptime=0.0)
            raise HostUnavailable(f"could not find a free loopback port for the Host: {exc}",
                                  self.logs.tail(LOG_TAIL)) from exc
        token = new_token()
        # The fingerprint is taken while the Host starts; Ready waits for both.
        scan = asyncio.ensure_future(self._changes.fingerprint())
        try:
            return await self._launch(number, port, token, scan)
        finally:
            if not scan.done():
                scan.cancel()
            await asyncio.gather(scan, return_exceptions=True)

    async def _launch(self, number: int, port: int, token: str,
                      scan: asyncio.Future[Fingerprint]) -> Generation:
        def on_line(stream: str, text: str) -> None:
            # A Host that prints its environment must not leak the live token into host.log,
            # GET /host/logs or a failed run's log_tail (stored and exported): scrubbed here,
            # before anything keeps the line.
            self.logs.append(number, stream, text.replace(token, TOKEN_MASK))

        argv: list[str] = []
        try:
            argv = self.config.command()
            env = child_env(self.config.base_env, generation=number, port=port, token=token,
                            capture_socket=self.config.capture_socket,
                            tree=tree_id(self.config.record_path))
            launch = await self.config.spawner.launch(argv, self.config.project_dir, env,
                                                      on_line)
        except (HostUnavailable, OSError) as exc:
            self._crashed(was_ready=False, uptime=0.0)
            if isinstance(exc, HostUnavailable):
                raise
            raise HostUnavailable(f"could not start the Host ({argv[:1]}): {exc}",
                                  self.logs.tail(LOG_TAIL)) from exc
        process = launch.process
        self._process = process
        gen = Generation(number, process.pid, port, time.time(), process.create_time, token, {},
                         start_mode=launch.mode, start_reason=launch.reason,
                         marker=launch.marker)
        self.generation = gen
        record_generation(self.config.record_path, gen)
        try:
            await wait_ready(process, gen.url, self.config.start_timeout,
                             lambda: self.logs.tail(LOG_TAIL, number))
            gen.fingerprint = await scan
            await self._check_exposure(gen)
        except HostUnavailable:
            await self._reap(process, gen)
            self._process = None
            self._crashed(was_ready=False, uptime=0.0)
            raise
        self._ready(process, gen)
        return gen

    async def _check_exposure(self, gen: Generation) -> None:
        """Try the new generation as a web page would; say so when it answers."""
        found = await exposure(gen.url)
        self.exposure = [exposed_warning(gen.url, found)] if found else []
        if found:
            log.warning("Host generation %d is reachable by any web page: %s. Fix: %s",
                        gen.number, "; ".join(found), self.exposure[0]["fix"])

    async def _reap(self, process: HostProcess | None, gen: Generation | None) -> None:
        """Stop a process by the bounded sequence and note how that ended."""
        if process is None:
            return
        step = await process.stop(self.config.stop_grace)
        self._last_stop_step = step.value
        self._last_exit_code = process.returncode
        if gen is not None:
            gen.exit_code = process.returncode
            await self._reap_tree(gen, "stop")

    async def _reap_tree(self, gen: Generation, when: str) -> None:
        """What the group kill missed: descendants that left it or outlived their parent."""
        self.note_reaped(await asyncio.to_thread(reap_marked, ENV_MARKER, marker(gen.number),
                                                 when))

    def note_reaped(self, reaped: list[dict[str, Any]]) -> None:
        self.reaped = (self.reaped + reaped)[-REAPED_KEPT:]

    # -- exits, back-off ----------------------------------------------------------------------

    async def _watch_exit(self, process: HostProcess, gen: Generation) -> None:
        code = await asyncio.shield(process.exited)
        await self._action(lambda: self._on_exit(process, gen, code))

    async def _on_exit(self, process: HostProcess, gen: Generation, code: int) -> None:
        if self._process is not process or self.state != HostState.READY:
            return  # our own stop or restart: not a crash
        log.warning("Host generation %d exited with code %s", gen.number, code)
        gen.exit_code = code
        self._last_exit_code = code
        await process.stop(self.config.stop_grace)  # reaps whatever is left in its group
        await self._reap_tree(gen, "exit")
        self._process = None
        uptime = time.monotonic() - (gen.ready_mono or time.monotonic())
        self._crashed(was_ready=True, uptime=uptime)

    async def _restart_after(self, delay: float) -> None:
        await asyncio.sleep(delay)
        self._backoff = None
        await self._action(self._auto_start)

    async def _auto_start(self) -> None:
        if self.state != HostState.BACKOFF or self._closed:
            return
        try:
            await self._start()
        except HostUnavailable as exc:
            log.warning("automatic Host restart failed: %s", exc.message)

    def _cancel_backoff(self) -> None:
        task, self._backoff = self._backoff, None
        self._backoff_until = None
        if task is not None and task is not asyncio.current_task():
            task.cancel()

    def _spawn(self, coro: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
        """A task this supervisor owns: `close` awaits every one of them."""
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    # -- transitions: the only places the state changes ---------------------------------------

    def _starting(self) -> int:
        """A new generation is being spawned; its number."""
        self._generations += 1  # first, so the `starting` event names its generation
        self._move(HostState.STARTING)
        return self._generations

    def _ready(self, process: HostProcess, gen: Generation) -> None:
        """The generation answered its agent card; from now on its exit is watched."""
        gen.ready_at = time.time()
        gen.ready_mono = time.monotonic()
        self._move(HostState.READY)
        self._spawn(self._watch_exit(process, gen))

    def _stopping(self) -> HostProcess | None:
        """The running process is detached (an exit now is ours, not a crash) for reaping."""
        self._move(HostState.STOPPING)
        process, self._process = self._process, None
        return process

    def _stopped(self) -> None:
        self._move(HostState.STOPPED)

    def _crashed(self, was_ready: bool, uptime: float) -> None:
        """The Host exited or never got Ready: back off and retry, or crashloop."""
        gen = self.generation
        served = was_ready and gen is not None and gen.number == self._served
        delay = self._policy.on_exit(was_ready, uptime, served=served)
        self._move(HostState.CRASHLOOP if delay is None else HostState.BACKOFF)
        if delay is None or self._closed:
            return
        self._backoff_until = time.time() + delay
        self._backoff = self._spawn(self._restart_after(delay))

    def _move(self, target: HostState) -> None:
        check(self.state, target)
        log.info("host %s -> %s", self.state.value, target.value)
        self.state = target
        snapshot = self.status()
        for listener in self.listeners:
            listener(snapshot)
