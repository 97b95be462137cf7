"""`suite run NAME --ci`: one command on a fresh checkout, no daemon needed.

When the project's daemon runs, the suite runs there (its history records the suite run,
as any other), and the command says so. Otherwise it starts a private daemon: its own
runtime folder and a temporary history (`LLAMON_PLAYGROUND_HISTORY_DIR`), so the project's
`.llamon/` is never written; it reads the suite from the project's suite file, runs it
against the code on disk, and is stopped (with its Host) and its folder removed before the
command exits, whatever happened.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from llamon_playground.cli.connect import health, wait_healthy
from llamon_playground.cli.errors import DaemonNotRunning
from llamon_playground.cli.terminal.control import EXIT_ERROR, Command, run_command
from llamon_playground.common.config import ENV_RUNTIME_BASE, Settings, build_settings

HISTORY_ENV = "LLAMON_PLAYGROUND_HISTORY_DIR"
START_TIMEOUT = 60.0
STOP_TIMEOUT = 60.0


def say(line: str) -> None:
    print(f"llamon-playground: {line}", file=sys.stderr, flush=True)


def _running(settings: Settings) -> int | None:
    try:
        info = asyncio.run(health(settings))
    except DaemonNotRunning:
        return None
    return int(info.get("pid") or 0)


def run_ci(settings: Settings, args: argparse.Namespace, command: Command) -> int:
    """Run `command` against the project's daemon, or a private one started (and stopped)
    here."""
    pid = _running(settings)
    if pid is not None:
        say(f"using the running daemon (pid {pid}) of {settings.project_dir}: this suite "
            "run is recorded in its history")
        return run_command(settings, args, command)
    # Short: the daemon's socket path must fit in 108 bytes.
    folder = Path(tempfile.mkdtemp(prefix="lpci-"))
    env = {**os.environ, ENV_RUNTIME_BASE: str(folder / "run"),
           HISTORY_ENV: str(folder / "history")}
    private = build_settings(settings.project_dir, env)
    proc = _spawn(private, env, folder / "daemon.log")
    try:
        try:
            info = asyncio.run(wait_healthy(private, proc, START_TIMEOUT))
        except DaemonNotRunning as exc:
            say(f"the private daemon did not start: {exc}; its log: {folder / 'daemon.log'}")
            _print_log(folder / "daemon.log")
            return EXIT_ERROR
        say(f"no daemon runs for {settings.project_dir}: started a private one (pid "
            f"{info.get('pid')}) with a temporary history; it stops when the suite ends")
        return run_command(private, args, command)
    finally:
        _stop(proc)
        shutil.rmtree(folder, ignore_errors=True)


def _spawn(settings: Settings, env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    settings.runtime_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    with os.fdopen(fd, "ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "llamon_playground", "--log-file", str(log), "daemon",
             str(settings.project_dir)],
            stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True, env=env)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM (the daemon stops its Host first), then SIGKILL to its group if it hangs."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        say(f"the private daemon (pid {proc.pid}) did not stop in {STOP_TIMEOUT:g} s; killed")
        try:
            os.killpg(proc.pid, 9)
        except ProcessLookupError:
            pass
        proc.wait()


def _print_log(log: Path) -> None:
    try:
        tail = log.read_text("utf-8", "replace").splitlines()[-20:]
    except OSError:
        return
    for line in tail:
        print(f"  {line}", file=sys.stderr)
