"""Reaching a project's daemon on its Unix socket: the session the client talks through, the
errors a broken socket becomes, and finding or starting the daemon (`ensure_daemon`)."""

from __future__ import annotations

import asyncio
import os
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Protocol, cast

import aiohttp
import orjson

from llamon_playground.cli.api_types import Health
from llamon_playground.cli.errors import ConnectionLost, DaemonNotRunning
from llamon_playground.common.config import Settings

# What a broken or absent socket looks like from aiohttp; all become DaemonNotRunning.
NETWORK_ERRORS = (aiohttp.ClientError, OSError, TimeoutError)


def network_error(exc: BaseException) -> DaemonNotRunning:
    if isinstance(exc, (aiohttp.ClientConnectorError, FileNotFoundError,
                        ConnectionRefusedError)):
        return DaemonNotRunning(f"nothing answers on the daemon's socket: {exc}")
    return ConnectionLost(f"the daemon closed the connection: {exc or type(exc).__name__}")


def answer_body(raw: bytes) -> Any:
    try:
        return orjson.loads(raw) if raw else None
    except orjson.JSONDecodeError:
        return {"detail": {"error": "bad_answer", "message": raw[:200].decode(errors="replace")}}


def check_runtime_dir(settings: Settings) -> None:
    """Refuse to talk through a runtime dir that is not ours: whoever owns it owns the socket."""
    try:
        st = os.lstat(settings.runtime_dir)
    except FileNotFoundError:
        return  # nothing there: connecting fails as "not running"
    if stat.S_ISLNK(st.st_mode) or st.st_uid != os.getuid():
        raise DaemonNotRunning(f"{settings.runtime_dir} is not a directory of ours; "
                               "refusing to use its socket")


def socket_session(settings: Settings, timeout: aiohttp.ClientTimeout) -> aiohttp.ClientSession:
    check_runtime_dir(settings)
    return aiohttp.ClientSession(connector=aiohttp.UnixConnector(path=str(settings.socket_path)),
                                 base_url="http://daemon", timeout=timeout)


# -- finding and starting the daemon ---------------------------------------------------------

async def health(settings: Settings, timeout: float = 2.0) -> Health:
    """The daemon's /health, or DaemonNotRunning."""
    try:
        async with socket_session(settings, aiohttp.ClientTimeout(total=timeout)) as http:
            async with http.get("/health") as resp:
                return cast(Health, orjson.loads(await resp.read()))
    except (*NETWORK_ERRORS, orjson.JSONDecodeError) as exc:
        raise DaemonNotRunning(str(exc) or type(exc).__name__) from exc


def daemon_log(settings: Settings) -> Path:
    """Where a started daemon writes (0600 like the rest of the runtime directory: the log
    names runs and the project); the directory made if needed."""
    settings.runtime_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    log_file = settings.runtime_dir / "daemon.log"
    fd = os.open(log_file, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.fchmod(fd, 0o600)  # a log an older version made 0644
    os.close(fd)
    return log_file


def daemon_argv(settings: Settings, log_file: Path) -> list[str]:
    """The daemon's command line after the interpreter."""
    return ["-m", "llamon_playground", "--log-file", str(log_file), "daemon",
            str(settings.project_dir)]


def spawn_daemon(settings: Settings) -> subprocess.Popen[bytes]:
    """Start a detached daemon for the project (its own session: it outlives this process).
    It writes its log itself, rotated by size (`--log-file`); what it prints before its
    logging starts goes to the same file."""
    log_file = daemon_log(settings)
    with open(log_file, "ab") as out:
        return subprocess.Popen(
            [sys.executable, *daemon_argv(settings, log_file)],
            stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True,
            env=dict(os.environ))


class DaemonProcess(Protocol):
    """A daemon this process started: a `subprocess.Popen`, or one forked by `up`
    (cli/daemon_fork.py)."""

    pid: int

    @property
    def returncode(self) -> int | None:
        """Its exit code once reaped (negative: the signal that ended it), else None."""

    def poll(self) -> int | None:
        """Reap it if it has exited: the exit code, else None."""

    def wait(self, timeout: float | None = None) -> int:
        """Its exit code once it exits; subprocess.TimeoutExpired after `timeout` s."""

    def terminate(self) -> None:
        """SIGTERM."""

    def kill(self) -> None:
        """SIGKILL."""


async def wait_healthy(settings: Settings, proc: DaemonProcess | None,
                       timeout: float = 20.0) -> Health:
    """/health once the daemon answers; DaemonNotRunning if `proc` exits or time runs out."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return await health(settings, timeout=1.0)
        except DaemonNotRunning:
            if proc is not None and proc.poll() is not None:
                raise DaemonNotRunning(f"the daemon exited with code {proc.returncode}"
                                       f"{_last_words(settings)}; see "
                                       f"{settings.runtime_dir / 'daemon.log'}") from None
            if time.monotonic() > deadline:
                if proc is not None:
                    end_process(proc)  # a daemon that never answered is not left behind
                raise
            await asyncio.sleep(0.05)


def _last_words(settings: Settings) -> str:
    """Why a daemon that just exited said it did (its last `llamon-playground: ` line)."""
    try:
        with open(settings.runtime_dir / "daemon.log", "rb") as fh:
            fh.seek(max(fh.seek(0, os.SEEK_END) - 8192, 0))
            tail = fh.read().decode("utf-8", "replace")
    except OSError:
        return ""
    said = [ln for ln in tail.splitlines() if ln.startswith("llamon-playground: ")]
    return f" ({said[-1][len('llamon-playground: '):]})" if said else ""


def end_process(proc: DaemonProcess, grace: float = 5.0) -> None:
    """SIGTERM, then SIGKILL after `grace` s; reaped either way."""
    proc.terminate()
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


async def ensure_daemon(settings: Settings, timeout: float = 20.0) -> Health:
    """Attach to the project's daemon, starting one first when none runs."""
    try:
        return await health(settings)
    except DaemonNotRunning:
        return await wait_healthy(settings, spawn_daemon(settings), timeout)
