"""The Host supervisor: the one owner of start, stop and restart.

Every lifecycle action runs in a task the supervisor owns, one at a time (a lock:
`state.Lifecycle.act`), so a cancelled caller never leaves the Host half started. Exits are
classified by CrashPolicy: restart now, restart after a back-off, or stop trying
(crashloop) until an edit or an explicit start. Stop wins: it cancels a pending back-off.

The state changes only in the named transitions at the end (`_starting`, `_ready`,
`_stopping`, `_stopped`, `_crashed`); the state itself and who hears of its changes are
`state.Lifecycle`'s (each move checked against the table, each listener guarded: one that
raises is logged and cannot leave a Ready Host unwatched). The rest is delegated, one job
per module: starting, stopping and reaping a generation
(`launch`), the child's environment (`environment`), readiness (`readiness`), the orphan
record (`orphans`), restart on a file change (`watch.change_policy`), back-off, crashloop
and the pending automatic restart (`crash_policy`), the process itself (`process`); the
status is built by the owner of each part (`generation_status`, `Reaper.status`,
`host_last_error`)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

from llamon_playground.host_manager.crash_policy import Backoff, CrashPolicy
from llamon_playground.host_manager.environment import KeptPort, local_url
from llamon_playground.host_manager.errors import HostUnavailable
from llamon_playground.host_manager.generation import Generation, generation_status
from llamon_playground.host_manager.last_error import host_last_error
from llamon_playground.host_manager.launch import (
    HostConfig,
    Reaper,
    start_generation,
    take_port,
)
from llamon_playground.host_manager.logs import HostLogs
from llamon_playground.host_manager.missing_module import explain
from llamon_playground.host_manager.orphans import forget_generation
from llamon_playground.host_manager.process import HostProcess
from llamon_playground.host_manager.state import HostState, Lifecycle, StateListener, listener_name
from llamon_playground.host_manager.watch.change_policy import (
    CRASHLOOP_CLEARED,
    ChangePolicy,
    restart_wanted,
)
from llamon_playground.host_manager.watch.fingerprint import WatchRules
from llamon_playground.host_manager.watch.pending import PendingEdits

__all__ = ["Generation", "HostConfig", "HostSupervisor"]

log = logging.getLogger(__name__)

class HostSupervisor:
    """The one owner of the Host process: start, stop, restart, crash back-off.

    Others read it through properties and `status()`, act through the public coroutines
    (each runs under the supervisor's lock, in a task it owns), and tell it things through
    the few `note_*`/`follow_*`/`add_*` methods; none of them writes its attributes.
    """

    def __init__(self, config: HostConfig) -> None:
        self._config = config
        self._logs = HostLogs(config.log_path, max_bytes=config.log_bytes,
                              file_bytes=config.log_file_bytes,
                              file_backups=config.log_file_backups)
        self._life = Lifecycle(self.status)  # the state, and who hears of its changes
        self._generation: Generation | None = None
        self._project_warnings: list[dict[str, str]] = []
        self._exposure: list[dict[str, str]] = []  # the Ready generation's `host_exposed`
        self._start_problem: list[dict[str, Any]] = []  # the last failed start's, until Ready
        # One address for the daemon's life: every generation serves on the kept port.
        self._port = KeptPort(config.record_path.with_name("host_port"))
        self._reaper = Reaper(config.stop_grace)
        self._served: int | None = None  # the last generation a run was sent to
        self._process: HostProcess | None = None
        self._changes = ChangePolicy(config.rules)  # follows pyproject.toml's env_file
        self._edits = PendingEdits()  # the watcher's outside edit not applied yet
        self._policy = CrashPolicy(config.crash)
        # Who hears of the next spawned process (the ensure_ready under way asked).
        self._on_spawned: Callable[[Generation], None] | None = None
        self._backoff = Backoff(self._life.spawn)
        self._generations = 0
        self._restarts = 0
        self._closed = False

    # -- status ------------------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        """GET /host's body (and each `host.state` event's)."""
        gen = self._generation
        number = (self._generations if self.state == HostState.STARTING
                  else gen.number if gen else None)
        return {"state": self.state.value, "generation": number,
                **generation_status(gen, running=self._process is not None,
                                    ready=self.state == HostState.READY),
                "a2a_url": local_url(self._port.port) if self._port.port else None,
                "restarts": self._restarts, "crashes": self._policy.consecutive,
                **self._reaper.status(),
                "backoff_until": self._backoff.until if self.state == HostState.BACKOFF else None,
                "warm_parent": self._config.spawner.describe(),
                "warnings": self.warnings(),
                "last_error": host_last_error(self._logs, self.state, number)}

    @property
    def state(self) -> HostState:
        """Where the Host is in its lifecycle (state.py's table)."""
        return self._life.state

    @property
    def generation(self) -> Generation | None:
        """The latest generation (Ready only when `state` is READY)."""
        return self._generation

    @property
    def config(self) -> HostConfig:
        """What it was built with (frozen)."""
        return self._config

    @property
    def rules(self) -> WatchRules:
        """Which files the Host depends on, as of the latest `follow_project`."""
        return self._changes.rules

    @property
    def logs(self) -> HostLogs:
        """The Host's stdout and stderr, every generation's."""
        return self._logs

    @property
    def changes(self) -> ChangePolicy:
        """The watched files as this supervisor sees them, their digests cached by mtime and
        size (a run's changed files are hashed through it: the restart decision reuses
        them)."""
        return self._changes

    @property
    def pending_edits(self) -> PendingEdits:
        """An outside edit the watcher noticed and has not applied yet (it opens and
        settles it; a run about to be sent waits for it)."""
        return self._edits

    @property
    def process(self) -> HostProcess | None:
        """The running generation's process (None when none runs)."""
        return self._process

    def warnings(self) -> list[dict[str, str]]:
        """The Host's standing warnings: the project's, then the Ready generation's, then
        what made the last start fail (a missing module and its install command) until a
        generation is Ready."""
        return [*self._project_warnings, *self._exposure, *self._start_problem]

    def exposure_warnings(self) -> list[dict[str, str]]:
        """`host_exposed`, when the Ready generation answers requests a web page can send."""
        return list(self._exposure)

    def follow_project(self, env_file: str, warnings: list[dict[str, str]]) -> None:
        """What the project's pyproject.toml says now: the env file to watch (and never to
        hash into history) and the project's standing warnings (replacing the previous)."""
        self._project_warnings = list(warnings)
        self._changes.follow_env_file(env_file)

    def add_state_listener(self, listener: StateListener) -> None:
        """Call `listener(status())` after every state change. A listener that raises is
        logged and the Host goes on (`Lifecycle.move`)."""
        self._life.listen(listener)

    def note_serving(self) -> None:
        """A run is sent to the Ready generation: once it served, its death is not a crash
        loop (CrashPolicy.on_exit)."""
        if self._generation is not None:
            self._served = self._generation.number

    @property
    def capture_token(self) -> str | None:
        """The Ready generation's capture token (None when no generation is Ready)."""
        gen = self._generation
        return gen.token if gen is not None and self.state == HostState.READY else None

    # -- public actions ----------------------------------------------------------------------

    async def ensure_ready(self, on_spawned: Callable[[Generation], None] | None = None
                           ) -> Generation:
        """The Ready generation; an explicit start if the Host is not running (it clears a
        crashloop and a pending back-off). The one way to start the Host and wait until it
        is Ready: a run's start phase, POST /host/start, a start at daemon boot. `on_spawned`
        hears when this start's generation has a process (it is not Ready yet): a run's
        start phase ends there and its ready phase begins."""
        return await self._life.act(lambda: self._ensure_ready(on_spawned))

    async def restart(self) -> Generation:
        """A new generation whatever the state (the old one is reaped meanwhile)."""
        return await self._life.act(self._restart)

    async def stop(self) -> None:
        """Stop the Host until a next start; a pending automatic restart is dropped."""
        self._backoff.cancel()  # stop wins over a pending automatic restart
        await self._life.act(self._stop)

    async def restart_for_save(self, changed_files: list[str]) -> bool:
        """Restart once if the saved files differ from what this generation started with."""
        return await self._life.act(lambda: self._restart_for_save(changed_files))

    async def restart_if_changed(self) -> set[str]:
        """The watcher's restart: only when the watched files differ from the generation's."""
        return await self._life.act(self._restart_if_changed)

    def is_env_file(self, rel: str) -> bool:
        """The project's env file holds secrets: its hash is never recorded (a hash of a
        short secret can be tested against guesses)."""
        return rel == self._changes.rules.env_file

    async def changed_since_generation(self) -> set[str]:
        """The watched files that differ from what the current generation started with."""
        gen = self._generation
        return set() if gen is None else await self._changes.changed_since(gen.fingerprint)

    async def close(self) -> None:
        """Daemon shutdown: cancel the back-off, let actions finish, stop the Host for good."""
        self._closed = True
        self._backoff.cancel()
        async with self._life.lock:  # waits for a running action (a start) to finish first
            await self._stop()
        await self._life.drain()  # exit watchers wake now that the process is gone
        await self._config.spawner.close()
        self._logs.close()

    # -- actions (run under the lock) ---------------------------------------------------------

    async def _ensure_ready(self, on_spawned: Callable[[Generation], None] | None = None
                            ) -> Generation:
        if self.state == HostState.READY and self._generation is not None:
            return self._generation
        self._backoff.cancel()
        self._policy.reset()  # an explicit start clears a crashloop
        self._on_spawned = on_spawned
        try:
            return await self._start()
        finally:
            self._on_spawned = None

    async def _restart(self) -> Generation:
        self._backoff.cancel()
        self._restarts += 1
        return await self._start()

    async def _restart_for_save(self, changed_files: list[str]) -> bool:
        gen = self._generation
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
            # one starts, on the same port as soon as the old one closes its listener (the
            # first thing a server does on SIGTERM), so a restart costs about one start, not
            # a stop plus a start. The restart answers once the new one is Ready, not when
            # the old one is gone (its open streams may take a while): the reaping is a task
            # of ours (`close` awaits it) that records the stop step when done.
            self._retire()
        elif self.state != HostState.STOPPED:
            await self._stop()  # reap what is left of the previous generation first
        return await self._spawn_generation()

    def _retire(self) -> asyncio.Task[None]:
        self._backoff.cancel()
        gen = self._generation
        process = self._stopping()
        self._stopped()
        return self._life.spawn(self._reaper.stop(process, gen))

    async def _stop(self) -> None:
        self._backoff.cancel()
        if self.state == HostState.STOPPED:
            return
        process = self._stopping()
        try:
            await self._reaper.stop(process, self._generation)
        finally:
            forget_generation(self._config.record_path)
            self._stopped()

    async def _spawn_generation(self) -> Generation:
        number = self._starting()
        # A generation of this daemon may still hold the port (a restart): wait for it to
        # let go, bounded by the stop sequence. At boot, a moment for a dying orphan.
        wait = self._config.stop_grace + 1.0 if number > 1 else 1.0
        try:
            port = await take_port(self._port, wait, self._logs)
            process, gen, self._exposure = await start_generation(
                self._config, self._logs, self._changes, self._reaper, number, port,
                self._spawned)
        except HostUnavailable as exc:
            self._process = None
            self._start_problem = explain(exc, self._config.command, self._config.project_dir)
            self._crashed(was_ready=False, uptime=0.0)
            raise
        self._ready(process, gen)
        return gen

    def note_reaped(self, reaped: list[dict[str, Any]]) -> None:
        """Processes of the Host's tree reaped outside the group kill (the daemon's boot
        sweep): GET /host lists the latest."""
        self._reaper.note(reaped)

    # -- exits, the automatic restart --------------------------------------------------------------

    async def _watch_exit(self, process: HostProcess, gen: Generation) -> None:
        code = await asyncio.shield(process.exited)
        await self._life.act(lambda: self._on_exit(process, gen, code))

    async def _on_exit(self, process: HostProcess, gen: Generation, code: int) -> None:
        if self._process is not process or self.state != HostState.READY:
            return  # our own stop or restart: not a crash
        log.warning("Host generation %d exited with code %s", gen.number, code)
        await self._reaper.exited(process, gen, code)
        self._process = None
        uptime = time.monotonic() - (gen.ready_mono or time.monotonic())
        self._crashed(was_ready=True, uptime=uptime)

    async def _auto_start(self) -> None:
        if self.state != HostState.BACKOFF or self._closed:
            return
        try:
            await self._start()
        except HostUnavailable as exc:
            log.warning("automatic Host restart failed: %s", exc.message)

    # -- transitions: the only places the state changes ---------------------------------------

    def _starting(self) -> int:
        """A new generation is being spawned; its number."""
        self._generations += 1  # first, so the `starting` event names its generation
        self._life.move(HostState.STARTING)
        return self._generations

    def _spawned(self, process: HostProcess, gen: Generation) -> None:
        """A new generation's process exists (not Ready yet): status shows its pid."""
        self._process, self._generation = process, gen
        hook, self._on_spawned = self._on_spawned, None
        if hook is not None:
            try:  # the caller's hook, guarded as the state listeners are
                hook(gen)
            except Exception:
                log.exception("on_spawned hook %s failed; the start goes on",
                              listener_name(hook))

    def _ready(self, process: HostProcess, gen: Generation) -> None:
        """The generation answered its agent card; from now on its exit is watched (the
        watcher first: whatever the listeners of the move do, a Ready Host is watched; its
        exit is handled under the lock, after this move)."""
        gen.ready_at = time.time()
        gen.ready_mono = time.monotonic()
        self._start_problem = []
        self._life.spawn(self._watch_exit(process, gen))
        self._life.move(HostState.READY)

    def _stopping(self) -> HostProcess | None:
        """The running process is detached (an exit now is ours, not a crash) for reaping."""
        self._life.move(HostState.STOPPING)
        process, self._process = self._process, None
        return process

    def _stopped(self) -> None:
        self._life.move(HostState.STOPPED)

    def _crashed(self, was_ready: bool, uptime: float) -> None:
        """The Host exited or never got Ready: back off and retry, or crashloop."""
        gen = self._generation
        served = was_ready and gen is not None and gen.number == self._served
        delay = self._policy.on_exit(was_ready, uptime, served=served)
        self._life.move(HostState.CRASHLOOP if delay is None else HostState.BACKOFF)
        if delay is not None and not self._closed:
            self._backoff.schedule(delay, lambda: self._life.act(self._auto_start))

