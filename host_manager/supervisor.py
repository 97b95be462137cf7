"""The Host supervisor: one owner for start/stop/restart, generations, readiness.

Lifecycle actions are serialized by one lock; a run asks `ensure_ready()` and gets the
current generation's URL, or a HostUnavailable with the last log lines.
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

from .errors import HostUnavailable
from .logs import HostLogs
from .process import HostProcess, StopStep
from .state import HostState, check

log = logging.getLogger(__name__)
T = TypeVar("T")

CARD_PATH = "/.well-known/agent-card.json"
# Never handed to the Host: they belong to the daemon's own service manager.
INHERIT_BLOCKLIST_PREFIXES = ("LISTEN_", "WATCHDOG_")
INHERIT_BLOCKLIST = {"NOTIFY_SOCKET"}
ENV_MARKER = "LLAMON_PLAYGROUND_HOST"


@dataclass(frozen=True)
class HostConfig:
    project_dir: Path
    command: Callable[[], list[str]]  # read at each start: pyproject edits apply next start
    base_env: Mapping[str, str]
    log_path: Path
    start_timeout: float = 30.0
    stop_grace: float = 3.0


@dataclass
class Generation:
    number: int
    pid: int
    port: int
    started_at: float
    create_time: float
    ready_at: float | None = None
    exit_code: int | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@dataclass
class HostStatus:
    state: HostState
    generation: Generation | None
    restarts: int
    last_exit_code: int | None
    last_stop_step: str | None
    warnings: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        gen = self.generation
        return {"state": self.state.value,
                "generation": gen.number if gen else None,
                "pid": gen.pid if gen and gen.exit_code is None else None,
                "url": gen.url if gen and self.state == HostState.READY else None,
                "ready_at": gen.ready_at if gen else None,
                "restarts": self.restarts, "last_exit_code": self.last_exit_code,
                "last_stop_step": self.last_stop_step, "warnings": self.warnings}


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
        self._process: HostProcess | None = None
        self._lock = asyncio.Lock()
        self._actions: set[asyncio.Task[Any]] = set()
        self._watch: asyncio.Task[None] | None = None
        self._generations = 0
        self._restarts = 0
        self._last_exit_code: int | None = None
        self._last_stop_step: str | None = None

    def _move(self, target: HostState) -> None:
        check(self.state, target)
        log.info("host %s -> %s", self.state.value, target.value)
        self.state = target

    def status(self) -> HostStatus:
        return HostStatus(self.state, self.generation, self._restarts, self._last_exit_code,
                          self._last_stop_step)

    @property
    def process(self) -> HostProcess | None:
        return self._process

    async def ensure_ready(self) -> Generation:
        """The Ready generation, starting the Host first if it is not running."""
        return await self._action(self._ensure_ready)

    async def restart(self) -> Generation:
        return await self._action(self._restart)

    async def stop(self) -> None:
        await self._action(self._stop)

    async def _action(self, fn: Callable[[], Awaitable[T]]) -> T:
        """Run a lifecycle action in a task the supervisor owns, one at a time.

        A caller that is cancelled (a run being cancelled mid-start) stops waiting, but the
        action itself finishes, so the Host is never left half started or half stopped.
        """
        async def serialized() -> T:
            async with self._lock:
                return await fn()
        task = asyncio.create_task(serialized())
        self._actions.add(task)
        task.add_done_callback(self._actions.discard)
        return await asyncio.shield(task)

    async def _ensure_ready(self) -> Generation:
        if self.state == HostState.READY and self.generation is not None:
            return self.generation
        return await self._start()

    async def _restart(self) -> Generation:
        await self._stop()
        self._restarts += 1
        return await self._start()

    def _child_env(self, generation: int, port: int) -> dict[str, str]:
        env = {k: v for k, v in self.config.base_env.items()
               if k not in INHERIT_BLOCKLIST and not k.startswith(INHERIT_BLOCKLIST_PREFIXES)}
        env.update({"PYTHONUNBUFFERED": "1", "LLAMON_HOST_PORT": str(port),
                    "LLAMON_HOST_URL": f"http://127.0.0.1:{port}",
                    ENV_MARKER: f"{os.getpid()}:{generation}"})
        return env

    async def _start(self) -> Generation:
        if self.state != HostState.STOPPED:
            await self._stop()  # reap what is left of the previous generation first
        self._move(HostState.STARTING)
        self._generations += 1
        number = self._generations
        port = free_port()

        def on_line(stream: str, text: str) -> None:
            self.logs.append(number, stream, text)

        try:
            argv = self.config.command()
            process = HostProcess(argv, self.config.project_dir,
                                  self._child_env(number, port), on_line)
        except HostUnavailable:
            self._move(HostState.FAILED)
            raise
        except OSError as exc:
            self._move(HostState.FAILED)
            raise HostUnavailable(f"could not start the Host ({argv[0]}): {exc}",
                                  self.logs.tail(20)) from exc
        self._process = process
        self.generation = Generation(number, process.pid, port, time.time(),
                                     process.create_time)
        self._watch = asyncio.create_task(self._watch_exit(process, self.generation))
        try:
            await self._wait_ready(process, self.generation)
        except HostUnavailable:
            self._move(HostState.FAILED)
            await self._reap(process)
            raise
        self.generation.ready_at = time.time()
        self._move(HostState.READY)
        return self.generation

    async def _wait_ready(self, process: HostProcess, gen: Generation) -> None:
        deadline = time.monotonic() + self.config.start_timeout
        timeout = aiohttp.ClientTimeout(total=2)
        async with aiohttp.ClientSession(timeout=timeout) as http:
            while True:
                if process.exited.done():
                    raise HostUnavailable(
                        f"the Host exited with code {process.returncode} before it was Ready",
                        self.logs.tail(20, gen.number), reason="runtime_unavailable")
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
                        f"{self.config.start_timeout:g} s", self.logs.tail(20, gen.number))
                # Poll interval, bounded by the process exiting (which wakes us at once).
                await asyncio.wait({process.exited}, timeout=0.05)

    async def _watch_exit(self, process: HostProcess, gen: Generation) -> None:
        code = await asyncio.shield(process.exited)
        gen.exit_code = code
        self._last_exit_code = code
        # During STARTING, _wait_ready sees the exit itself and reports it to its caller.
        if self._process is process and self.state == HostState.READY:
            log.warning("host generation %d exited with code %s", gen.number, code)
            self._move(HostState.EXITED)

    async def _reap(self, process: HostProcess) -> None:
        step = await process.stop(self.config.stop_grace)
        self._last_stop_step = step.value

    async def _stop(self) -> None:
        process = self._process
        if process is None:
            if self.state != HostState.STOPPED:
                self._move(HostState.STOPPING)
                self._move(HostState.STOPPED)
            return
        self._move(HostState.STOPPING)
        try:
            step = await process.stop(self.config.stop_grace)
            self._last_stop_step = step.value
        finally:
            if self._watch is not None:
                self._watch.cancel()
                await asyncio.gather(self._watch, return_exceptions=True)
                self._watch = None
            self._process = None
            self._move(HostState.STOPPED)

    async def close(self) -> None:
        """Daemon shutdown: let pending actions finish, then stop the Host for good."""
        if self._actions:
            await asyncio.gather(*self._actions, return_exceptions=True)
        async with self._lock:
            await self._stop()
        self.logs.close()


__all__ = ["HostConfig", "HostSupervisor", "HostUnavailable", "Generation", "StopStep"]
