"""Talking to a running daemon over its Unix socket (CLI, front, tests, scripts, Studio).

`DaemonClient` is what a Studio-like process uses to attach to the project's daemon: the
Playground API straight on the socket, no front and no token (the socket is the trust
boundary: 0600 in our 0700 runtime directory, peer uid checked by the daemon).
"""

from __future__ import annotations

import asyncio
import os
import stat
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

import aiohttp
import orjson

from llamon_playground.common.config import Settings
from llamon_playground.common.contract import API_PREFIX

PREFIX = API_PREFIX


class DaemonNotRunning(Exception):
    """No daemon answers on the project's socket."""


class DaemonError(Exception):
    """The daemon answered with an error: its status and `detail` ({error, message, ...})."""

    def __init__(self, status: int, detail: dict[str, Any]) -> None:
        super().__init__(f"{detail.get('message', 'error')} ({detail.get('error', status)})")
        self.status = status
        self.detail = detail

    @property
    def code(self) -> str:
        return str(self.detail.get("error", ""))


@dataclass
class SseEvent:
    id: int | None
    event: str
    data: dict[str, Any]


def check_runtime_dir(settings: Settings) -> None:
    """Refuse to talk through a runtime dir that is not ours: whoever owns it owns the socket."""
    try:
        st = os.lstat(settings.runtime_dir)
    except FileNotFoundError:
        return  # nothing there: connecting fails as "not running"
    if stat.S_ISLNK(st.st_mode) or st.st_uid != os.getuid():
        raise DaemonNotRunning(f"{settings.runtime_dir} is not a directory of ours; "
                               "refusing to use its socket")


def daemon_session(settings: Settings, **kwargs: Any) -> aiohttp.ClientSession:
    check_runtime_dir(settings)
    connector = aiohttp.UnixConnector(path=str(settings.socket_path))
    return aiohttp.ClientSession(connector=connector, base_url="http://daemon", **kwargs)


async def health(settings: Settings, timeout: float = 2.0) -> dict[str, Any]:
    try:
        async with daemon_session(settings) as http:
            async with http.get("/health", timeout=aiohttp.ClientTimeout(total=timeout)) as resp:
                return orjson.loads(await resp.read())  # type: ignore[no-any-return]
    except (aiohttp.ClientError, OSError, TimeoutError) as exc:
        raise DaemonNotRunning(str(exc)) from exc


class DaemonClient:
    """The Playground API on the daemon's socket: `async with DaemonClient(settings) as c`."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._http: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> DaemonClient:
        self._http = daemon_session(self.settings,
                                    timeout=aiohttp.ClientTimeout(total=None, sock_connect=5))
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        if self._http is not None:
            await self._http.close()

    @property
    def http(self) -> aiohttp.ClientSession:
        if self._http is None:
            raise RuntimeError("use DaemonClient in `async with`")
        return self._http

    async def call(self, method: str, path: str, body: Any = None,
                   params: dict[str, str] | None = None) -> Any:
        """One API call (`path` under /api/playground/v1); raises DaemonError on 4xx/5xx."""
        data = orjson.dumps(body) if body is not None else None
        try:
            async with self.http.request(method, PREFIX + path, data=data, params=params,
                                         headers={"Content-Type": "application/json"}) as resp:
                raw = await resp.read()
                status = resp.status
        except (aiohttp.ClientConnectionError, OSError) as exc:
            raise DaemonNotRunning(str(exc)) from exc
        try:
            doc = orjson.loads(raw) if raw else None
        except orjson.JSONDecodeError:
            doc = {"detail": {"error": "bad_answer", "message": raw[:200].decode(errors="replace")}}
        if status >= 400:
            detail = doc.get("detail") if isinstance(doc, dict) else None
            raise DaemonError(status, detail if isinstance(detail, dict) else
                              {"error": "http_error", "message": f"HTTP {status}"})
        return doc

    async def stream(self, path: str, params: dict[str, str] | None = None
                     ) -> AsyncIterator[SseEvent]:
        """An SSE route's events until the daemon ends the stream."""
        try:
            async with self.http.get(PREFIX + path, params=params) as resp:
                if resp.status >= 400:
                    doc = orjson.loads(await resp.read())
                    raise DaemonError(resp.status, doc.get("detail", {}))
                async for event in _parse_sse(resp.content):
                    yield event
        except (aiohttp.ClientConnectionError, OSError) as exc:
            raise DaemonNotRunning(str(exc)) from exc


async def _parse_sse(content: aiohttp.StreamReader) -> AsyncIterator[SseEvent]:
    fields: dict[str, str] = {}
    async for raw in content:
        line = raw.decode().rstrip("\r\n")
        if not line:
            if "data" in fields:
                seq = fields.get("id", "")
                yield SseEvent(int(seq) if seq.isdigit() else None,
                               fields.get("event", "message"), orjson.loads(fields["data"]))
            fields = {}
        elif not line.startswith(":"):
            name, _, value = line.partition(":")
            fields[name] = value[1:] if value.startswith(" ") else value


def spawn_daemon(settings: Settings, log_path: Path | None = None) -> subprocess.Popen[bytes]:
    """Start a detached daemon for the project (its own session: it outlives this process)."""
    settings.runtime_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    log_file = log_path or settings.runtime_dir / "daemon.log"
    with open(log_file, "ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "llamon_playground", "daemon", str(settings.project_dir)],
            stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True,
            env=dict(os.environ))


async def wait_healthy(settings: Settings, proc: subprocess.Popen[bytes] | None,
                       timeout: float = 20.0) -> dict[str, Any]:
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
