"""`llamon-playground up`: the daemon (started or attached to) and a front, for a person.

It says what it serves before it serves it: a named folder that is not a project is refused
(unless `--allow-empty`), and the Host command's warnings come before the URL. The front runs
as a child process, so `--detach` can return once it is ready (the URL, the pids, how to
stop them) and the foreground `up` can watch its daemon: an explicit stop of the daemon
(`llamon-playground stop`, a SIGTERM) ends `up` too, saying why, while a daemon that
crashes is waited for by the front as before.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import FrameType

from llamon_playground.cli.front_record import FRONT_LINE, forget_front, record_front
from llamon_playground.cli.terminal.control import (
    EXIT_ERROR,
    EXIT_NOT_RUNNING,
    EXIT_OK,
    EXIT_USAGE,
    stop_daemon_pid,
)
from llamon_playground.cli.terminal.daemon_watch import DaemonWatch
from llamon_playground.common.config import Settings

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


def front_argv(settings: Settings, args: argparse.Namespace,
               log_file: Path | None = None) -> list[str]:
    """The front `up` runs: printing its URL with the token to `up` (foreground), or, with
    a log file of its own (`--detach`), never: `up` prints that URL to the terminal only."""
    log_args = ["--log-file", str(log_file)] if log_file else []
    argv = [sys.executable, "-m", "llamon_playground", *log_args, "front",
            str(settings.project_dir), "--port", str(args.port), "--host", args.host]
    return (argv + ([] if log_file else ["--print-token-url"])
            + (["--no-auth"] if args.no_auth else []))


def cmd_up(args: argparse.Namespace, settings: Settings) -> int:
    from llamon_playground.api.guard import NonLoopbackBind, check_bind_address
    from llamon_playground.cli.client import DaemonNotRunning, health, spawn_daemon, wait_healthy
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
    for warning in host_command_warnings(settings.project_dir):
        print(f"llamon-playground: warning: {warning}", file=sys.stderr, flush=True)

    async def attach() -> tuple[int, bool]:
        try:
            info = await health(settings)
            print(f"attached to the running daemon (pid {info.get('pid')})", flush=True)
            return int(info["pid"]), False
        except DaemonNotRunning:
            proc = spawn_daemon(settings)
            info = await wait_healthy(settings, proc)
            print(f"started the daemon (pid {info.get('pid')}); log: "
                  f"{settings.runtime_dir / 'daemon.log'}", flush=True)
            return int(info["pid"]), True

    try:
        pid, started = asyncio.run(attach())
    except DaemonNotRunning as exc:
        print(f"llamon-playground: {exc}", file=sys.stderr)
        return EXIT_NOT_RUNNING
    if args.detach:
        return _detached(settings, args, pid)
    watch = DaemonWatch(settings, pid)
    code = _foreground_front(settings, args, watch)
    if watch.stopped is not None:
        print(f"the daemon (pid {watch.stopped}) was stopped (`llamon-playground stop` or a "
              "SIGTERM): `up` ends with it", flush=True)
        return code
    return _leave_daemon(settings, pid, started) or code


def _foreground_front(settings: Settings, args: argparse.Namespace, watch: DaemonWatch) -> int:
    """The front as a child, its output passed through, until it ends or its daemon stops."""
    front = subprocess.Popen(front_argv(settings, args), stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=None, env=dict(os.environ))

    def end_front(signum: int, frame: FrameType | None) -> None:
        if front.poll() is None:
            front.send_signal(signal.SIGTERM)

    previous = {sig: signal.signal(sig, end_front) for sig in (signal.SIGTERM, signal.SIGINT)}
    assert front.stdout is not None
    echo = threading.Thread(target=_echo, args=(front.stdout, settings, front.pid), daemon=True)
    echo.start()
    watch.start(on_stop=lambda: end_front(signal.SIGTERM, None))
    try:
        while True:
            try:
                code = front.wait()
                break
            except KeyboardInterrupt:
                continue  # the front got the same Ctrl-C: wait for it
    finally:
        watch.close()
        echo.join(timeout=2.0)
        forget_front(settings, front.pid)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    # Ended by a signal we forwarded (Ctrl-C, SIGTERM, the daemon's stop): a clean end.
    return EXIT_OK if code in (0, -signal.SIGTERM, -signal.SIGINT) else code


def _echo(pipe: object, settings: Settings, front_pid: int) -> None:
    for raw in pipe:  # type: ignore[attr-defined]
        line = raw.decode("utf-8", "replace")
        sys.stdout.write(line)
        sys.stdout.flush()
        if line.startswith(FRONT_LINE):
            record_front(settings, front_pid, line[len(FRONT_LINE):].split()[0])


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
        print(f"open in a browser: {url}?token={_front_token(settings)}", flush=True)
    record_front(settings, front.pid, url, detached=True)
    print(f"running in the background: the daemon (pid {pid}) and the front (pid {front.pid}); "
          f"the front's log: {log_path}", flush=True)
    print(f"stop both: llamon-playground stop {settings.project_dir}", flush=True)
    return EXIT_OK


def _announced(text: str) -> bool:
    """The front has said where it serves and how it is reached (its token's hint, or the
    --no-auth warning): it serves."""
    lines = text.splitlines()
    return any(ln.startswith(FRONT_LINE) for ln in lines) and any(
        ln.startswith("token: ") or ln.startswith("WARNING: --no-auth") for ln in lines)


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
    if not started:
        print(f"the daemon (pid {pid}) was running before `up` and keeps running; "
              "`llamon-playground stop` stops it", flush=True)
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
    print(f"stopped the daemon (pid {pid}) that `up` started, and its Host; "
          "`up --detach` keeps it running", flush=True)
    return EXIT_OK
