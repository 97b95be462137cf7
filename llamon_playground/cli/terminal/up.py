"""`llamon-playground up`: the daemon (started or attached to) and a front, for a person.

It says what it serves before it serves it: a named folder that is not a project is refused
(unless `--allow-empty`), and what can be seen before the first run (the Host command's
warnings, a PostgreSQL backend, the bundled example's missing extra) comes before the URL.

One front per project: when one already serves (its record in `fronts/`), `up` (and
`up --detach`) attaches to it, prints its URL and ends; a daemon that died under it is
started again first, unless the foreground `up` serving that front does it itself.

The foreground `up` is the front: the front's app runs in `up`'s own event loop, so it
ends with `up` however `up` ends (SIGKILL too) and no process only waits on another. `up`
supervises its daemon from the same process (`daemon_watch.py`, a thread): a daemon that
crashes is started again with back-off while the front keeps its port; an explicit stop of
the daemon (`llamon-playground stop`, a SIGTERM) ends `up` too, saying why. `--detach`
starts the front as a process of its own, in its own session, and returns once it serves
(the URL, the pids, how to stop them).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import errno
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from llamon_playground.cli.bundled_example import missing_extra
from llamon_playground.cli.front_record import FRONT_LINE, forget_front, fronts_in, record_front
from llamon_playground.cli.terminal.control import (
    EXIT_ERROR,
    EXIT_NOT_RUNNING,
    EXIT_OK,
    EXIT_USAGE,
    stop_daemon_pid,
)
from llamon_playground.cli.terminal.daemon_watch import (
    START_TIMEOUT,
    DaemonWatch,
    alive,
    answers,
)
from llamon_playground.cli.terminal.hints import suggest
from llamon_playground.common.config import Settings
from llamon_playground.common.heap import freeze_startup_heap, keep_large_buffers_apart

if TYPE_CHECKING:  # the front's modules load only for the commands that run a front
    from llamon_playground.api.app import FrontOptions
    from llamon_playground.cli.connect import DaemonProcess

STOP_TIMEOUT = 60.0  # how long `up` waits for the daemon it started to stop
FRONT_READY_TIMEOUT = 30.0

NOT_A_PROJECT = (
    "{path} is not a llamon project: it has no pyproject.toml. A project is a folder with a "
    "pyproject.toml whose [tool.llamon] table names its `kind` (agent, flow, orchestrator) "
    "and its `host_command` (a process serving A2A on 127.0.0.1:$LLAMON_HOST_PORT); see "
    "docs/project-format.md. Serve the folder anyway with `--allow-empty`, or run `up` with "
    "no folder for the bundled example")


def not_a_project(path: Path) -> str | None:
    return None if (path / "pyproject.toml").is_file() else NOT_A_PROJECT.format(path=path)


def front_argv(settings: Settings, args: argparse.Namespace, log_file: Path) -> list[str]:
    """The front `up --detach` leaves running, logging to a file of its own (never the
    token: `up` prints the URL with the token to the terminal only)."""
    argv = [sys.executable, "-m", "llamon_playground", "--log-file", str(log_file), "front",
            str(settings.project_dir), "--port", str(args.port), "--host", args.host]
    return argv + (["--no-auth"] if args.no_auth else [])


def say(line: str) -> None:
    print(line, flush=True)


def warn(line: str) -> None:
    print(f"llamon-playground: warning: {line}", file=sys.stderr, flush=True)


def cmd_up(args: argparse.Namespace, settings: Settings) -> int:
    """`llamon-playground up`: the daemon (started when none runs) and a front on it, the page's
    link printed; the exit code."""
    from llamon_playground.api.guard import NonLoopbackBind, check_bind_address
    from llamon_playground.cli.terminal.traces import missing_extra_notice
    from llamon_playground.daemon.introspect.host_checks import host_command_warnings
    if args.project and not args.allow_empty:
        refused = not_a_project(settings.project_dir)
        if refused:
            print(f"llamon-playground: {refused}", file=sys.stderr, flush=True)
            return EXIT_USAGE
    try:
        check_bind_address(args.host)
    except NonLoopbackBind as exc:
        print(f"llamon-playground: {exc}", file=sys.stderr)
        return EXIT_USAGE
    # What can be seen before the first run, said now rather than at the first run's failure.
    extra = missing_extra(settings.project_dir)
    if extra:
        warn(extra)
    traces = missing_extra_notice(settings)
    if traces:
        warn(traces)
    for warning in host_command_warnings(settings.project_dir):
        warn(warning)
    serving = [doc for doc in fronts_in(settings.runtime_dir) if doc.get("url")]
    if serving:
        return _attach_to_front(settings, serving[0])
    try:
        pid, proc = _daemon(settings, fork=not args.detach)  # a detached `up` ends now
    except _NoDaemon as exc:
        print(f"llamon-playground: {exc}", file=sys.stderr)
        return EXIT_NOT_RUNNING
    if args.detach:
        return _detached(settings, args, pid)
    watch = DaemonWatch(settings, pid, started=proc is not None, proc=proc, say=say)
    code = _foreground_front(settings, args, watch)
    if watch.stopped is not None:
        say(f"the daemon (pid {watch.stopped}) was stopped (`llamon-playground stop` or a "
            "SIGTERM): `up` ends with it")
        return code
    if watch.gave_up:
        return EXIT_ERROR
    pid, started = watch.current()
    return _leave_daemon(settings, pid, started) or code


class _NoDaemon(Exception):
    """No daemon could be started (its exit and log named)."""


def _daemon(settings: Settings, fork: bool = True) -> tuple[int, DaemonProcess | None]:
    """The running daemon's pid, or one started now (and its process): forked from this
    process when it can be and `fork` (cli/daemon_fork.py), so that the two share their
    common pages."""
    from llamon_playground.cli.client import spawn_daemon
    from llamon_playground.cli.connect import daemon_argv, daemon_log
    from llamon_playground.cli.daemon_fork import can_fork, fork_daemon
    running = asyncio.run(_running(settings))
    if running is not None:
        say(f"attached to the running daemon (pid {running})")
        return running, None
    # Between two event loops (the health check's is closed): where a fork can be taken.
    log_file = daemon_log(settings)
    proc: DaemonProcess = (fork_daemon(log_file, daemon_argv(settings, log_file))
                           if fork and can_fork() else spawn_daemon(settings))
    pid = asyncio.run(_healthy(settings, proc))
    say(f"started the daemon (pid {pid}); log: {log_file}")
    return pid, proc


async def _running(settings: Settings) -> int | None:
    from llamon_playground.cli.client import DaemonNotRunning, health
    try:
        return int((await health(settings))["pid"])
    except DaemonNotRunning:
        return None


async def _healthy(settings: Settings, proc: DaemonProcess) -> int:
    from llamon_playground.cli.client import DaemonNotRunning, wait_healthy
    try:
        return int((await wait_healthy(settings, proc))["pid"])
    except DaemonNotRunning as exc:
        raise _NoDaemon(str(exc)) from None


def _attach_to_front(settings: Settings, front: dict[str, Any]) -> int:
    """A front already serves the project: make sure its daemon runs, print its URL, end."""
    recorded = front.get("up_pid")
    up_pid = recorded if isinstance(recorded, int) and alive(recorded) else 0
    supervised = up_pid != 0
    if supervised and not answers(settings):
        # Its `up` starts the daemon again itself: a second one here would race it.
        say(f"the daemon is starting again under the `up` (pid {up_pid}) that serves the "
            "front; waiting for it")
        deadline = time.monotonic() + START_TIMEOUT
        while not answers(settings):
            if time.monotonic() > deadline or not alive(up_pid):
                print(f"llamon-playground: no daemon answers for {settings.project_dir}; see "
                      f"{settings.runtime_dir / 'daemon.log'}", file=sys.stderr, flush=True)
                return EXIT_NOT_RUNNING
            time.sleep(0.05)
    elif not supervised:
        try:
            _daemon(settings, fork=False)  # this `up` ends now: nothing to share with
        except _NoDaemon as exc:
            print(f"llamon-playground: {exc}", file=sys.stderr)
            return EXIT_NOT_RUNNING
    url = str(front["url"])
    say(f"{FRONT_LINE}{url}  (project {settings.project_dir})")
    if front.get("auth", True):
        token = _token(settings)
        if token:
            say(f"open in a browser: {url}?token={token}")
    who = f"the foreground `up` (pid {up_pid})" if supervised else "`up --detach`"
    say(f"this front (pid {front['pid']}) already serves the project, started by {who}: "
        f"`up` attaches to it and ends; stop it with `{suggest(settings, 'stop')}`")
    return EXIT_OK


def _token(settings: Settings) -> str | None:
    from llamon_playground.api.token_store import TokenError, given_token, kept_token
    try:
        return given_token(settings) or kept_token(settings)
    except TokenError:
        return None


def _foreground_front(settings: Settings, args: argparse.Namespace, watch: DaemonWatch) -> int:
    """The front in this process's own event loop until it is stopped (Ctrl-C, SIGTERM,
    `stop`) or its daemon stops: `up` is the front, so it needs no lifeline to end with it
    and no process of ours only waits on another."""
    from llamon_playground.api.app import FrontOptions
    stop = asyncio.Event()
    me = os.getpid()

    def serving(url: str) -> None:
        loop = asyncio.get_running_loop()

        def end_front() -> None:  # from the watch's thread
            with contextlib.suppress(RuntimeError):  # the loop has closed: it ended already
                loop.call_soon_threadsafe(stop.set)
        record_front(settings, me, url, auth=not args.no_auth, up_pid=me)
        watch.start(on_end=end_front)

    options = FrontOptions(host=args.host, port=args.port, auth=not args.no_auth,
                           show_token_url=True)
    try:
        return serve_front(settings, options, serving=serving, stop=stop)
    finally:
        watch.close()
        forget_front(settings, me)


def serve_front(settings: Settings, options: FrontOptions,
                serving: Callable[[str], None] | None = None,
                stop: asyncio.Event | None = None) -> int:
    """The front until SIGTERM/SIGINT (or `stop`), with its refusals as exit codes;
    `serving` is called with its URL once it listens (api/app.py's `run_front`)."""
    from llamon_playground.api.app import run_front
    from llamon_playground.api.guard import NonLoopbackBind
    from llamon_playground.api.token_store import TokenError
    keep_large_buffers_apart()
    freeze_startup_heap()
    try:
        try:
            asyncio.run(run_front(settings, options, serving=serving, stop=stop))
        finally:
            # The loop gave SIGTERM back to its default as it closed. The front is ending
            # anyway: a SIGTERM now (`stop` ending every front while this one already ends
            # with its daemon) must not turn a clean end into a death by signal.
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
    except (NonLoopbackBind, TokenError) as exc:
        print(f"llamon-playground: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except PermissionError as exc:
        print(f"llamon-playground: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except OSError as exc:
        if exc.errno != errno.EADDRINUSE:
            raise
        print(f"llamon-playground: port {options.port} on {options.host} is in use (another "
              f"front, or another program): `llamon-playground list` shows the fronts "
              f"serving; choose another port with --port", file=sys.stderr, flush=True)
        return EXIT_ERROR
    return EXIT_OK


def _detached(settings: Settings, args: argparse.Namespace, pid: int) -> int:
    """A front in its own session, its output in front.log; return once it serves."""
    log_path = settings.runtime_dir / "front.log"
    # The front logs to front.log itself, rotated by size; its announce lines land in the
    # file as it was at the start, read here through this descriptor (a rotation since
    # moved the name, not the file).
    fd = os.open(log_path, os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
    try:
        start = os.fstat(fd).st_size
        front = subprocess.Popen(front_argv(settings, args, log_path),
                                 stdin=subprocess.DEVNULL, stdout=fd, stderr=fd,
                                 start_new_session=True, env=dict(os.environ))
        deadline = time.monotonic() + FRONT_READY_TIMEOUT
        while True:
            text = _read_from(fd, start)
            if _announced(text):
                break
            if front.poll() is not None or time.monotonic() > deadline:
                if front.poll() is None:
                    front.terminate()
                print(text, end="", file=sys.stderr)
                print(f"llamon-playground: the front did not start; its log: {log_path}",
                      file=sys.stderr, flush=True)
                return EXIT_ERROR
            time.sleep(0.05)
    finally:
        os.close(fd)
    url = ""
    for line in text.splitlines():
        if line.startswith(FRONT_LINE):
            url = line[len(FRONT_LINE):].split()[0]
            print(line, flush=True)
    if not args.no_auth:
        # To the terminal only: the token never goes into a log.
        say(f"open in a browser: {url}?token={_front_token(settings)}")
    record_front(settings, front.pid, url, detached=True, auth=not args.no_auth)
    say(f"running in the background: the daemon (pid {pid}) and the front (pid {front.pid}); "
        f"the front's log: {log_path}")
    say(f"stop both: llamon-playground stop {settings.project_dir}")
    return EXIT_OK


def _announced(text: str) -> bool:
    """The front has said where it serves and how it is reached (its token's hint, or the
    --no-auth warning): it serves."""
    lines = text.splitlines()
    return any(ln.startswith(FRONT_LINE) for ln in lines) and any(
        ln.startswith(("token: ", "WARNING: --no-auth")) for ln in lines)


def _read_from(fd: int, start: int, most: int = 1 << 20) -> str:
    return os.pread(fd, most, start).decode("utf-8", "replace")


def _front_token(settings: Settings) -> str:
    """The token the detached front opened its door with (the environment's, or the kept
    one it picked before announcing itself)."""
    from llamon_playground.api.token_store import given_token, kept_token
    return given_token(settings) or kept_token(settings) or ""


def _leave_daemon(settings: Settings, pid: int, started: bool) -> int:
    """As `docker compose up` does: a daemon `up` started stops with it, one it attached to
    keeps running; either way, say which. Returns an exit code on trouble."""
    if not alive(pid):
        return EXIT_OK  # it died under us and was not started again: nothing to stop
    if not started:
        say(f"the daemon (pid {pid}) was running before `up` and keeps running; "
            f"`{suggest(settings, 'stop')}` stops it")
        return EXIT_OK
    try:
        stopped = stop_daemon_pid(settings, pid, STOP_TIMEOUT)
    except KeyboardInterrupt:  # a second Ctrl-C: stop waiting, the SIGTERM is on its way
        print(f"the daemon (pid {pid}) is still stopping", file=sys.stderr, flush=True)
        return EXIT_OK
    if not stopped:
        print(f"llamon-playground: the daemon (pid {pid}) that `up` started did not stop "
              f"within {STOP_TIMEOUT:g} s", file=sys.stderr, flush=True)
        return EXIT_ERROR
    say(f"stopped the daemon (pid {pid}) that `up` started, and its Host; "
        "`up --detach` keeps it running")
    return EXIT_OK
