"""One Host process: spawned in its own session, exit seen through the platform seam,
stopped by a fixed, bounded sequence.

Exit detection never waits for pipe EOF (a grandchild holding stdout would hide the Host's
death for ever, CPython gh-119710): the system says when the process itself exits (a pidfd
on Linux, kqueue or a thread in waitpid on the portable side: common/platform/).
"""

from __future__ import annotations

import asyncio
import enum
import os
import signal
import subprocess
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import IO

import psutil

from llamon_playground.common.platform import current as current_platform

# A Host's output as read, per stream ("stdout", "stderr"): bytes, `b""` at its end.
Output = Callable[[str, bytes], None]
READ_BYTES = 64 * 1024


class StopStep(enum.Enum):
    """How a stop ended, so callers and tests can tell which step was needed."""

    ALREADY_EXITED = "already_exited"
    TERMINATED = "terminated"
    KILLED = "killed"


class HostProcess:
    """A cold spawn: `HostProcess(argv, cwd, env, on_output)`. A generation forked by the
    warm parent is adopted with `HostProcess.adopt` and behaves the same from then on."""

    def __init__(self, argv: list[str], cwd: Path, env: Mapping[str, str],
                 on_output: Output) -> None:
        platform = current_platform()
        # On the event-loop thread: PDEATHSIG follows the thread that forks.
        popen = subprocess.Popen(
            argv, cwd=cwd, env=dict(env), stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
            preexec_fn=platform.die_with_parent(), close_fds=True)  # noqa: PLW1509 (above)
        self._attach(popen.pid, popen.stdout, popen.stderr, platform.child_status(popen),
                     on_output)

    @classmethod
    def adopt(cls, pid: int, stdout: IO[bytes], stderr: IO[bytes],
              exit_code: Callable[[], Awaitable[int]],
              on_output: Output) -> HostProcess:
        """A process somebody else forked (so only they can read its status: `exit_code`)."""
        self = cls.__new__(cls)
        self._attach(pid, stdout, stderr, exit_code, on_output)
        return self

    def _attach(self, pid: int, stdout: IO[bytes] | None, stderr: IO[bytes] | None,
                exit_code: Callable[[], Awaitable[int]],
                on_output: Output) -> None:
        self.pid = pid
        self.create_time = _create_time(self.pid)
        self._exit_code = exit_code
        self._collector: asyncio.Task[None] | None = None
        loop = asyncio.get_running_loop()
        self.exited: asyncio.Future[int] = loop.create_future()
        self._spoke: asyncio.Future[None] | None = None
        # No watch (the portable side, a process not ours): its awaited status is the sign.
        self._unwatch = current_platform().watch_exit(self.pid, self._on_exit_seen)
        if self._unwatch is None:
            self._collector = asyncio.create_task(self._collect())
        self._readers = [
            asyncio.create_task(self._read_output(stdout, "stdout", on_output)),
            asyncio.create_task(self._read_output(stderr, "stderr", on_output)),
        ]

    @property
    def returncode(self) -> int | None:
        """The exit code, or None while the process runs."""
        return self.exited.result() if self.exited.done() else None

    def _on_exit_seen(self) -> None:
        self._unwatch = None
        self._collector = asyncio.create_task(self._collect())

    async def _collect(self) -> None:
        code = await self._exit_code()
        if not self.exited.done():
            self.exited.set_result(code)

    async def _read_output(self, pipe: object, stream: str, on_output: Output) -> None:
        """Pass each read on as it is (lines are made by the receiver, host_manager/logs.py:
        a line reader here would drop what it cannot hold); `b""` once the pipe ends."""
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=READ_BYTES)
        transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), pipe)
        try:
            while True:
                chunk = await reader.read(READ_BYTES)
                on_output(stream, chunk)
                spoke, self._spoke = self._spoke, None
                if spoke is not None and not spoke.done():
                    spoke.set_result(None)
                if not chunk:
                    return
        finally:
            transport.close()

    def next_output(self) -> asyncio.Future[None]:
        """Done when the process next writes to its stdout or stderr (a Host says it listens
        as it starts to: the readiness probe asks then, not on its next poll)."""
        if self._spoke is None:
            self._spoke = asyncio.get_running_loop().create_future()
        return self._spoke

    async def drain(self, timeout: float) -> None:
        """Wait (at most `timeout`) until both pipes reach EOF, so every line the Host wrote
        before it exited is in the log. Called once the exit is seen and before a failure is
        recorded: the exit and the last lines arrive in no set order. Bounded because a
        grandchild may hold the pipes open; the readers go on reading after it."""
        readers = [task for task in self._readers if not task.done()]
        if readers:
            await asyncio.wait(readers, timeout=timeout)  # never cancels them

    async def wait(self, timeout: float) -> bool:
        """Whether the process exited within `timeout` s."""
        try:
            await asyncio.wait_for(asyncio.shield(self.exited), timeout)
        except TimeoutError:
            return False
        return True

    async def stop(self, grace: float) -> StopStep:
        """SIGTERM the group, wait `grace`, SIGKILL the group and every descendant found."""
        try:
            if self.exited.done():
                step = StopStep.ALREADY_EXITED
            else:
                _signal_group(self.pid, signal.SIGTERM)
                # The tree as it is now, for a Host that outlives its grace period: taken after
                # the SIGTERM (a scan of /proc, a millisecond here) so that a restart's new
                # generation does not wait for it. A Host still running then has kept its
                # children; a child that exits at once and leaves a grandchild behind is
                # found by the generation's marker (Reaper._sweep).
                descendants = _descendants(self.pid)
                if await self.wait(grace):
                    step = StopStep.TERMINATED
                else:
                    step = StopStep.KILLED
                    _signal_group(self.pid, signal.SIGKILL)
                    for proc in descendants:
                        _kill_quietly(proc)
                    await self.wait(grace)
            # Whatever else is left in the group (a grandchild that kept running) goes too.
            _signal_group(self.pid, signal.SIGKILL)
            return step
        finally:
            await self.close()

    async def close(self) -> None:
        """Stop reading the pipes: give them a moment to deliver the last lines, then cancel."""
        if self._readers:
            _, pending = await asyncio.wait(self._readers, timeout=0.5)
            for task in pending:
                task.cancel()
            await asyncio.gather(*self._readers, return_exceptions=True)
            self._readers = []
        if self._collector is not None and not self._collector.done():
            await asyncio.gather(self._collector, return_exceptions=True)
        if self._unwatch is not None and self.exited.done():
            self._unwatch()
            self._unwatch = None


def _create_time(pid: int) -> float:
    try:
        return float(psutil.Process(pid).create_time())
    except psutil.Error:
        return 0.0


def _descendants(pid: int) -> list[psutil.Process]:
    try:
        return list(psutil.Process(pid).children(recursive=True))
    except psutil.Error:
        return []


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass  # already gone counts as success


def _kill_quietly(proc: psutil.Process) -> None:
    try:
        proc.kill()
    except psutil.Error:
        pass
