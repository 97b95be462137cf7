"""The warm parent process, daemon side: start it, ask it to preload and to fork, learn
its children's exit codes.

The parent is `preloader.py` run by the project's interpreter, in its own session, killed
with the daemon (PDEATHSIG on Linux; on the portable side it ends itself and its
generations when its control socket, the daemon's lifeline to it, reads EOF). The daemon talks to it over one end of a socketpair handed to
it at spawn (SOCK_SEQPACKET: one message per request, descriptors ride along), so no other
process can ask it for a fork. The parent's own output goes to a log file of its own,
moved to `<name>.1` when a parent starts and finds it over `PARENT_LOG_BYTES` (a parent says
little: what its imports print, a traceback), so restarts never add up to a big file.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

import orjson

from llamon_playground.common.platform import current as current_platform

PRELOADER = Path(__file__).with_name("preloader.py")
MAX_MESSAGE = 1 << 20
REPLY_TIMEOUT = 10.0  # a fork or a start answer; a preload answers when its imports are done
EXIT_CODE_WAIT = 5.0  # after the exit was seen, for the parent's report of the status
PARENT_LOG_BYTES = 1 << 20


class ParentGone(Exception):
    """The warm parent exited or stopped answering."""


class WarmParent:
    """The daemon's handle on one warm parent: asks it to preload and to fork, and learns its
    children's exit codes (they are its children, not the daemon's)."""

    def __init__(self, python: str, popen: subprocess.Popen[bytes],
                 control: socket.socket) -> None:
        self.python = python
        self.pid = popen.pid
        self._popen = popen
        self._control = control
        self._replies: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self._codes: dict[int, int] = {}
        self._code_waiters: dict[int, asyncio.Future[int]] = {}
        self.gone = False
        self.started: dict[str, Any] = {}
        self.files: list[str] = []  # every file of a module loaded in the parent
        self.preloaded: set[str] = set()  # module names asked for (loaded or failed)
        self.failed: list[str] = []  # those that could not be imported on their own
        asyncio.get_running_loop().add_reader(control.fileno(), self._on_readable)

    @classmethod
    async def start(cls, python: str, cwd: Path, env: Mapping[str, str],
                    log_path: Path) -> WarmParent:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            _rotate_if_big(log_path)
            fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            try:
                # On the event-loop thread: PDEATHSIG follows the thread that forks.
                platform = current_platform()
                popen = subprocess.Popen(  # noqa: ASYNC220 (returns at once; the fork is short)
                    [python, str(PRELOADER), str(theirs.fileno()), platform.name],
                    cwd=cwd, env=dict(env), stdin=subprocess.DEVNULL, stdout=fd, stderr=fd,
                    start_new_session=True,
                    preexec_fn=platform.die_with_parent(),  # noqa: PLW1509 (PDEATHSIG, above)
                    pass_fds=(theirs.fileno(),))
            finally:
                os.close(fd)
        except OSError:
            ours.close()
            raise
        finally:
            theirs.close()
        ours.setblocking(False)
        parent = cls(python, popen, ours)
        try:
            parent.started = await parent._reply("started")
        except ParentGone:
            await parent.close()
            raise
        return parent

    # -- requests -------------------------------------------------------------------------------

    async def preload(self, modules: list[str], timeout: float) -> None:
        """Import `modules` in the parent (what it cannot import is left to each Host)."""
        self.preloaded.update(modules)
        self._send({"op": "preload", "modules": modules})
        reply = await self._reply("preloaded", timeout)
        self.files = list(reply.get("files", []))
        self.failed = list(reply.get("failed", []))

    async def fork(self, request: dict[str, Any], stdout_fd: int, stderr_fd: int) -> int:
        self._send({"op": "fork", **request}, (stdout_fd, stderr_fd))
        return int((await self._reply("forked"))["pid"])

    async def exit_code(self, pid: int, *, patient: bool = False) -> int:
        """The status the parent reaped for its child `pid` (a SIGKILL when it cannot say:
        a parent that died took its children along). `patient`: the report is the only
        sign of the exit (nothing saw it first), so no time limit."""
        if pid in self._codes:
            return self._codes.pop(pid)
        if self.gone:
            return -signal.SIGKILL
        waiter = self._code_waiters.setdefault(pid, asyncio.get_running_loop().create_future())
        try:
            return await asyncio.wait_for(asyncio.shield(waiter),
                                          None if patient else EXIT_CODE_WAIT)
        except TimeoutError:
            return -signal.SIGKILL
        finally:
            self._code_waiters.pop(pid, None)
            self._codes.pop(pid, None)

    def retire(self) -> None:
        """A fresh parent replaces this one: it exits by itself once its last generation is
        gone (a generation still stopping keeps its grace period), still reporting exits."""
        try:
            self._send({"op": "retire"})
        except ParentGone:
            pass

    def exited(self) -> bool:
        return self._popen.poll() is not None

    async def close(self) -> None:
        """SIGKILL: the parent holds no state worth a grace period, and its children (the
        generations) are stopped by the supervisor, not through it."""
        self._detach()
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        await asyncio.to_thread(self._popen.wait)

    # -- the control socket ---------------------------------------------------------------------

    def _send(self, message: dict[str, Any], fds: tuple[int, ...] = ()) -> None:
        if self.gone:
            raise ParentGone("the warm parent is gone")
        try:
            socket.send_fds(self._control, [orjson.dumps(message)], list(fds))
        except OSError as exc:
            self._detach()
            raise ParentGone(f"the warm parent is gone: {exc}") from exc

    async def _reply(self, op: str, timeout: float = REPLY_TIMEOUT) -> dict[str, Any]:
        try:
            reply = await asyncio.wait_for(self._replies.get(), timeout)
        except TimeoutError as exc:
            self._detach()
            raise ParentGone(f"the warm parent did not answer {op!r} within {timeout:g} s") \
                from exc
        if reply is None:
            raise ParentGone("the warm parent exited")
        if reply.get("op") != op:
            self._detach()
            raise ParentGone(f"the warm parent answered {reply.get('op')!r}, not {op!r}")
        return reply

    def _on_readable(self) -> None:
        try:
            data = self._control.recv(MAX_MESSAGE)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self._detach()
            return
        message = orjson.loads(data)
        if message.get("op") == "exited":
            pid, code = int(message["pid"]), int(message["code"])
            waiter = self._code_waiters.get(pid)
            if waiter is not None and not waiter.done():
                waiter.set_result(code)
            else:
                self._codes[pid] = code
            return
        self._replies.put_nowait(message)

    def _detach(self) -> None:
        if self.gone:
            return
        self.gone = True
        asyncio.get_running_loop().remove_reader(self._control.fileno())
        self._control.close()
        self._replies.put_nowait(None)
        for pid, waiter in self._code_waiters.items():
            if not waiter.done():
                # Said dead, so made dead: without PDEATHSIG (the portable side) a
                # generation could outlive a parent that went alone.
                _kill_group(pid)
                waiter.set_result(-signal.SIGKILL)


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def pipe_reader(fd: int) -> IO[bytes]:
    return os.fdopen(fd, "rb", buffering=0)


def _rotate_if_big(path: Path) -> None:
    try:
        if path.stat().st_size > PARENT_LOG_BYTES:
            path.replace(path.with_name(path.name + ".1"))
    except FileNotFoundError:
        pass
