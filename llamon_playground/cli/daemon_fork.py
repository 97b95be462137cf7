"""The daemon `up` starts, forked from `up` itself rather than executed anew.

`up` (serving the front) and the daemon are two Python processes with much the same heap:
the interpreter, asyncio, aiohttp, orjson, psutil, the package's common modules. Executed
anew, each builds its own copy. Forked, with the daemon's own modules imported first and
the heap frozen (the collector then leaves those objects alone), the two share those pages
until one of them writes to them: what a developer leaves running is smaller by what they
share (docs/benchmarks.md, `up_pss_idle`).

A fork is taken only when it is safe to go on running Python in the child: on the platform
seam's `linux` side (macOS forbids much of what a forked child would go on to do), with
this process's one thread, and no descriptor open but those it was started with (a forked
Python keeps everything its parent held: a lock another thread held stays held, a file a
stale object closes later may by then be the daemon's database). The child closes those it
was started with past stderr, as an executed daemon never gets them (a terminal's or a CI
runner's pipe held open would keep its reader waiting). Otherwise, and for every later
start (`up` restarts a daemon that died from its watch thread), the daemon is executed as
before (`connect.spawn_daemon`).
"""

from __future__ import annotations

import ctypes
import errno
import logging
import os
import select
import signal
import subprocess
import sys
import threading
import traceback
from pathlib import Path

FD_DIR = "/proc/self/fd"
# What `ps -o comm`, `top` and `pgrep` call the forked daemon: its command line stays `up`'s
# (a process cannot rewrite it without a C extension), its name can say what it is.
PROCESS_NAME = b"llamon-daemon"
PR_SET_NAME = 15
_inherited: frozenset[int] | None = None  # descriptors open when the command started


class ForkedDaemon:
    """The forked daemon as `up` follows it: the part of a `subprocess.Popen` it uses."""

    def __init__(self, pid: int, args: list[str]) -> None:
        self.pid = pid
        self.args = args
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            self._reap(os.WNOHANG)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.poll() is None:
            # The pidfd becomes readable when the child exits: no polling in between.
            pidfd = os.pidfd_open(self.pid)
            try:
                readable, _, _ = select.select([pidfd], [], [], timeout)
            finally:
                os.close(pidfd)
            if not readable:
                raise subprocess.TimeoutExpired(self.args, timeout or 0.0)
            self._reap(0)
        assert self.returncode is not None
        return self.returncode

    def _reap(self, options: int) -> None:
        try:
            pid, status = os.waitpid(self.pid, options)
        except ChildProcessError:  # reaped elsewhere: its code is lost
            self.returncode = 255
            return
        if pid:
            self.returncode = os.waitstatus_to_exitcode(status)

    def send_signal(self, sig: int) -> None:
        if self.returncode is None:
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                pass

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


def note_inherited_fds() -> None:
    """Called first thing by the command's entry point: what is open then belongs to no
    object of ours, so a forked child may close it."""
    global _inherited  # noqa: PLW0603 - one snapshot, at the start of the process
    from llamon_playground.common.platform import LINUX, current
    if current().name == LINUX:  # the portable side (macOS) runs the daemon anew
        _inherited = frozenset(_open_fds())


def can_fork() -> bool:
    """On Linux, one thread, nothing open but what the process was started with."""
    if _inherited is None or not hasattr(os, "pidfd_open"):
        return False
    if threading.active_count() != 1:
        return False
    try:
        return _open_fds() <= _inherited | {0, 1, 2}
    except OSError:
        return False


def _open_fds() -> set[int]:
    listed = [int(name) for name in os.listdir(FD_DIR)]
    return {fd for fd in listed if _is_open(fd)}


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError as exc:
        return exc.errno != errno.EBADF  # the listing's own descriptor is closed by now
    return True


def fork_daemon(log_file: Path, argv: list[str]) -> ForkedDaemon:
    """Fork the daemon (`argv`: its command line after the interpreter's, as
    `spawn_daemon` would run it); the caller checked `can_fork()`."""
    # The daemon's modules, imported before the fork so that both processes share them (the
    # CLI's are imported already: `up` runs from them).
    import llamon_playground.daemon.app  # noqa: F401
    from llamon_playground.common.heap import freeze_startup_heap
    freeze_startup_heap()
    fd = os.open(log_file, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid:
        os.close(fd)
        return ForkedDaemon(pid, [sys.executable, *argv])
    code = 1
    try:
        code = _serve_in_child(fd, argv)
    finally:
        try:
            logging.shutdown()
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)  # whatever happened, never back into `up`'s code


def _set_name(name: bytes) -> None:
    try:
        ctypes.CDLL(None).prctl(PR_SET_NAME, ctypes.c_char_p(name), 0, 0, 0)
    except (OSError, AttributeError):
        pass  # a name is a courtesy


def _serve_in_child(log_fd: int, argv: list[str]) -> int:
    import runpy
    try:
        os.setsid()  # its own session, as spawn_daemon's: it outlives `up`
        _set_name(PROCESS_NAME)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(log_fd, 1)
        os.dup2(log_fd, 2)
        os.close(devnull)
        os.close(log_fd)
        for inherited in sorted((_inherited or frozenset()) - {0, 1, 2}):
            try:
                os.close(inherited)
            except OSError:
                pass
        # What the executed daemon runs, `python -m llamon_playground ...`, in this process.
        sys.argv = [sys.executable, *argv[2:]]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        return 0
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 1
    except BaseException:  # noqa: BLE001 - said in the log; the caller exits
        traceback.print_exc()
        return 1
