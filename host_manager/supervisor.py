"""The Host supervisor: the one owner of start, stop and restart.

Every lifecycle action runs in a task the supervisor owns, one at a time (a lock), so a
cancelled caller never leaves the Host half started. Exits are classified by CrashPolicy:
restart now, restart after a back-off, or stop trying (crashloop) until an edit or an
explicit start. Stop wins: it cancels a pending back-off.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import aiohttp

from llamon_playground.host_manager.capture import ENV_SOCKET, ENV_TOKEN, new_token
from llamon_playground.host_manager.crash_policy import CrashPolicy, CrashSettings
from llamon_playground.host_manager.errors import HostUnavailable
from llamon_playground.host_manager.fingerprint import (
    Fingerprint,
    Fingerprinter,
    WatchRules,
    differences,
)
from llamon_playground.host_manager.logs import HostLogs
from llamon_playground.host_manager.orphans import write_record
from llamon_playground.host_manager.process import HostProcess
from llamon_playground.host_manager.state import HostState, check

log = logging.getLogger(__name__)
T = TypeVar("T")

CARD_PATH = "/.well-known/agent-card.json"
# Never handed to the Host: they belong to the daemon's own service manager.
INHERIT_BLOCKLIST_PREFIXES = ("LISTEN_", "WATCHDOG_")
INHERIT_BLOCKLIST = {"NOTIFY_SOCKET", ENV_TOKEN, ENV_SOCKET}
ENV_MARKER = "LLAMON_PLAYGROUND_HOST"
LOG_TAIL = 20


@dataclass(frozen=True)
class HostConfig:
    project_dir: Path
    command: Callable[[], list[str]]  # read at each start: pyproject edits apply next start
    base_env: Mapping[str, str]
    log_path: Path
    record_path: Path  # the generation record a next daemon uses to find an orphan
    capture_socket: str
    rules: WatchRules
    crash: CrashSettings = CrashSettings()
    start_timeout: float = 30.0
    stop_grace: float = 3.0


@dataclass
class Generation:
    number: int
    pid: int
    port: int
    started_at: float
    create_time: float
    token: str = field(repr=False)
    fingerprint: Fingerprint = field(repr=False)
    ready_at: float | None = None
    ready_mono: float | None = None
    exit_code: int | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class HostSupervisor:
    def __init__(self, config: HostConfig) -> None:
        self.config = config
        self.logs = HostLogs(config.log_path)
        self.state = HostState.STOPPED
        self.generation: Generation | None = None
        self.warnings: list[dict[str, str]] = []
        self.listeners: list[Callable[[dict[str, Any]], None]] = []
        self._process: HostProcess | None = None
        self._fingerprinter = Fingerprinter(config.rules)
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
                "warnings": list(self.warnings)}

    def _move(self, target: HostState) -> None:
        check(self.state, target)
        log.info("host %s -> %s", self.state.value, target.value)
        self.state = target
        snapshot = self.status()
        for listener in self.listeners:
            listener(snapshot)

    @property
    def process(self) -> HostProcess | None:
        return self._process

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
        return self._fingerprinter.hash_file(rel)

    async def changed_since_generation(self) -> set[str]:
        gen = self.generation
        if gen is None:
            return set()
        now = await asyncio.to_thread(self._fingerprinter.scan)
        return differences(gen.fingerprint, now)

    async def close(self) -> None:
        """Daemon shutdown: cancel the back-off, let actions finish, stop the Host for good."""
        self._closed = True
        self._cancel_backoff()
        async with self._lock:  # waits for a running action (a start) to finish first
            await self._stop()
        while self._tasks:  # exit watchers wake now that the process is gone
            await asyncio.gather(*list(self._tasks), return_exceptions=True)
        self.logs.close()

    async def _action(self, fn: Callable[[], Awaitable[T]]) -> T:
        async def serialized() -> T:
            async with self._lock:
                return await fn()
        task = asyncio.create_task(serialized())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return await asyncio.shield(task)

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
        changed = [rel for rel in changed_files if self.config.rules.is_watched(rel)
                   and await asyncio.to_thread(self.file_digest, rel)
                   != gen.fingerprint.get(rel)]
        if not changed:
            return False
        await self._restart()
        return True

    async def _restart_if_changed(self) -> set[str]:
        changed = await self.changed_since_generation()
        if self.state == HostState.CRASHLOOP:
            self._policy.reset()  # an edit clears a crashloop
        elif not changed or self.state not in (HostState.READY, HostState.BACKOFF):
            return set()
        try:
            await self._restart()
        except HostUnavailable:
            pass  # recorded as a crash; the status tells
        return changed or {"(crashloop cleared)"}

    async def _start(self) -> Generation:
        retiring: asyncio.Task[None] | None = None
        if self.state == HostState.READY:
            # A restart: the old generation gets its SIGTERM now and is reaped while the new
            # one imports (it binds a new port), so a restart costs about one start, not a
            # stop plus a start. Its stop step is recorded once it is gone.
            retiring = self._retire()
        elif self.state != HostState.STOPPED:
            await self._stop()  # reap what is left of the previous generation first
        try:
            return await self._spawn_generation()
        finally:
            if retiring is not None:
                await retiring

    def _retire(self) -> asyncio.Task[None]:
        self._cancel_backoff()
        self._move(HostState.STOPPING)
        process, self._process = self._process, None
        gen = self.generation
        self._move(HostState.STOPPED)

        async def reap() -> None:
            if process is None:
                return
            step = await process.stop(self.config.stop_grace)
            self._last_stop_step = step.value
            self._last_exit_code = process.returncode
            if gen is not None:
                gen.exit_code = process.returncode
        return self._spawn(reap())

    async def _spawn_generation(self) -> Generation:
        self._generations += 1  # first, so the `starting` event names its generation
        number = self._generations
        self._move(HostState.STARTING)
        port = free_port()
        token = new_token()
        # The fingerprint is taken while the Host starts; Ready waits for both.
        scan = asyncio.ensure_future(asyncio.to_thread(self._fingerprinter.scan))
        try:
            return await self._launch(number, port, token, scan)
        finally:
            if not scan.done():
                scan.cancel()
            await asyncio.gather(scan, return_exceptions=True)

    async def _launch(self, number: int, port: int, token: str,
                      scan: asyncio.Future[Fingerprint]) -> Generation:

        def on_line(stream: str, text: str) -> None:
            self.logs.append(number, stream, text)

        argv: list[str] = []
        try:
            argv = self.config.command()
            process = HostProcess(argv, self.config.project_dir,
                                  self._child_env(number, port, token), on_line)
        except (HostUnavailable, OSError) as exc:
            self._after_crash(was_ready=False, uptime=0.0)
            if isinstance(exc, HostUnavailable):
                raise
            raise HostUnavailable(f"could not start the Host ({argv[:1]}): {exc}",
                                  self.logs.tail(LOG_TAIL)) from exc
        self._process = process
        gen = Generation(number, process.pid, port, time.time(), process.create_time, token, {})
        self.generation = gen
        self._record(gen)
        try:
            await self._wait_ready(process, gen)
            gen.fingerprint = await scan
        except HostUnavailable:
            step = await process.stop(self.config.stop_grace)
            self._last_stop_step = step.value
            gen.exit_code = process.returncode
            self._last_exit_code = process.returncode
            self._process = None
            self._after_crash(was_ready=False, uptime=0.0)
            raise
        gen.ready_at = time.time()
        gen.ready_mono = time.monotonic()
        self._move(HostState.READY)
        self._spawn(self._watch_exit(process, gen))
        return gen

    async def _stop(self) -> None:
        self._cancel_backoff()
        if self.state == HostState.STOPPED:
            return
        self._move(HostState.STOPPING)
        process, self._process = self._process, None
        try:
            if process is not None:
                step = await process.stop(self.config.stop_grace)
                self._last_stop_step = step.value
                if self.generation is not None:
                    self.generation.exit_code = process.returncode
                self._last_exit_code = process.returncode
        finally:
            self.config.record_path.unlink(missing_ok=True)
            self._move(HostState.STOPPED)

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
        self._process = None
        uptime = time.monotonic() - (gen.ready_mono or time.monotonic())
        self._after_crash(was_ready=True, uptime=uptime)

    def _after_crash(self, was_ready: bool, uptime: float) -> None:
        delay = self._policy.on_exit(was_ready, uptime)
        if delay is None:
            self._move(HostState.CRASHLOOP)
            return
        self._move(HostState.BACKOFF)
        if self._closed:
            return
        self._backoff_until = time.time() + delay
        self._backoff = self._spawn(self._restart_after(delay))

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

    # -- helpers ------------------------------------------------------------------------------

    def _spawn(self, coro: Awaitable[Any]) -> asyncio.Task[Any]:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def _child_env(self, generation: int, port: int, token: str) -> dict[str, str]:
        env = {k: v for k, v in self.config.base_env.items()
               if k not in INHERIT_BLOCKLIST and not k.startswith(INHERIT_BLOCKLIST_PREFIXES)}
        env.update({"PYTHONUNBUFFERED": "1", "LLAMON_HOST_PORT": str(port),
                    "LLAMON_HOST_URL": f"http://127.0.0.1:{port}",
                    ENV_TOKEN: token, ENV_SOCKET: self.config.capture_socket,
                    ENV_MARKER: self._marker(generation)})
        return env

    @staticmethod
    def _marker(generation: int) -> str:
        return f"{os.getpid()}:{generation}"

    def _record(self, gen: Generation) -> None:
        try:
            write_record(self.config.record_path, {
                "daemon_pid": os.getpid(), "generation": gen.number, "pid": gen.pid,
                "create_time": gen.create_time, "started_at": gen.started_at,
                "marker": self._marker(gen.number)})
        except OSError as exc:
            log.warning("could not write the Host record: %s", exc)

    async def _wait_ready(self, process: HostProcess, gen: Generation) -> None:
        deadline = time.monotonic() + self.config.start_timeout
        timeout = aiohttp.ClientTimeout(total=2)
        async with aiohttp.ClientSession(timeout=timeout) as http:
            while True:
                if process.exited.done():
                    raise HostUnavailable(
                        f"the Host exited with code {process.returncode} before it was Ready",
                        self.logs.tail(LOG_TAIL, gen.number))
                try:
                    async with http.get(gen.url + CARD_PATH) as resp:
                        if resp.status == 200:
                            await resp.read()
                            return
                except (aiohttp.ClientError, TimeoutError):
                    pass
                if time.monotonic() > deadline:
                    raise HostUnavailable(
                        f"the Host did not answer its agent card within "
                        f"{self.config.start_timeout:g} s", self.logs.tail(LOG_TAIL, gen.number))
                # Poll interval, cut short when the process exits.
                await asyncio.wait({process.exited}, timeout=0.02)
