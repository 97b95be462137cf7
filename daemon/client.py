"""Talking to a running daemon over its Unix socket (CLI, front, tests, scripts)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp
import orjson

from .config import Settings


class DaemonNotRunning(Exception):
    """No daemon answers on the project's socket."""


def daemon_session(settings: Settings, **kwargs: Any) -> aiohttp.ClientSession:
    connector = aiohttp.UnixConnector(path=str(settings.socket_path))
    return aiohttp.ClientSession(connector=connector, base_url="http://daemon", **kwargs)


async def health(settings: Settings, timeout: float = 2.0) -> dict[str, Any]:
    try:
        async with daemon_session(settings) as http:
            async with http.get("/health", timeout=aiohttp.ClientTimeout(total=timeout)) as resp:
                return orjson.loads(await resp.read())  # type: ignore[no-any-return]
    except (aiohttp.ClientError, OSError, TimeoutError) as exc:
        raise DaemonNotRunning(str(exc)) from exc


def spawn_daemon(settings: Settings, log_path: Path | None = None) -> subprocess.Popen[bytes]:
    """Start a detached daemon for the project (its own session: it outlives this process)."""
    settings.runtime_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    log_file = log_path or settings.runtime_dir / "daemon.log"
    with open(log_file, "ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "daemon.cli", "daemon", str(settings.project_dir)],
            stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True,
            env=dict(os.environ))


async def wait_healthy(settings: Settings, proc: subprocess.Popen[bytes] | None,
                       timeout: float = 20.0) -> dict[str, Any]:
    import asyncio
    deadline = time.monotonic() + timeout
    while True:
        try:
            return await health(settings, timeout=1.0)
        except DaemonNotRunning:
            if proc is not None and proc.poll() is not None:
                raise DaemonNotRunning(f"the daemon exited with code {proc.returncode}; "
                                       f"see {settings.runtime_dir / 'daemon.log'}") from None
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.05)
