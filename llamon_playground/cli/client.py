"""The typed async client of a project's daemon: what the CLI and a Studio import.

It speaks the Playground API (docs/api.md) straight on the daemon's Unix socket: no front
and no token, the socket is the trust boundary (0600 in our 0700 runtime directory, the
peer's uid checked by the daemon). docs/client.md shows a Studio attaching with it.

    async with PlaygroundClient.for_project("path/to/project") as client:
        session = await client.create_session(title="try")
        run = await client.create_run(session["id"], parts=[text_part("hello")])
        async for event in client.stream(run["run_id"]):
            ...

It raises only the errors of `cli/errors.py`, never aiohttp's.
"""

from __future__ import annotations

import asyncio
import os
import stat
import subprocess
import sys
import time
from collections.abc import AsyncGenerator, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, cast

import aiohttp
import orjson

from llamon_playground.cli.api_types import (
    Health,
    HostLogs,
    HostStatus,
    Lineage,
    Part,
    Run,
    RunAccepted,
    Session,
)
from llamon_playground.cli.api_requests import InputPart
from llamon_playground.cli.errors import (
    ActiveRunConflict,
    ApiError,
    ConnectionLost,
    DaemonNotRunning,
    PlaygroundError,
    api_error,
)
from llamon_playground.cli.events import Event, text_part
from llamon_playground.cli.suites_client import SuiteClient
from llamon_playground.common.config import Settings, build_settings
from llamon_playground.common.contract import API_PREFIX
from llamon_playground.common.sse import aiter_sse

__all__ = [
    "ActiveRunConflict", "ApiError", "ConnectionLost", "DaemonNotRunning", "Event", "Health",
    "HostLogs", "HostStatus", "InputPart", "Lineage", "Part", "PlaygroundClient",
    "PlaygroundError", "Run", "RunAccepted", "Session", "ensure_daemon", "health",
    "spawn_daemon", "text_part", "wait_healthy",
]

PAGE = 1000  # the API's largest page
JSON_HEADERS = {"Content-Type": "application/json"}
# What a broken or absent socket looks like from aiohttp; all become DaemonNotRunning.
NETWORK_ERRORS = (aiohttp.ClientError, OSError, TimeoutError)


def _network_error(exc: BaseException) -> DaemonNotRunning:
    if isinstance(exc, (aiohttp.ClientConnectorError, FileNotFoundError,
                        ConnectionRefusedError)):
        return DaemonNotRunning(f"nothing answers on the daemon's socket: {exc}")
    return ConnectionLost(f"the daemon closed the connection: {exc or type(exc).__name__}")


def _body(raw: bytes) -> Any:
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


def _session(settings: Settings, timeout: aiohttp.ClientTimeout) -> aiohttp.ClientSession:
    check_runtime_dir(settings)
    return aiohttp.ClientSession(connector=aiohttp.UnixConnector(path=str(settings.socket_path)),
                                 base_url="http://daemon", timeout=timeout)


class PlaygroundClient:
    """The Playground API on the daemon's socket: `async with PlaygroundClient(settings) as c`."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._http: aiohttp.ClientSession | None = None

    @classmethod
    def for_project(cls, project: str | os.PathLike[str],
                    environ: Mapping[str, str] | None = None) -> PlaygroundClient:
        """The client of the daemon that serves `project` (found as the CLI finds it)."""
        return cls(build_settings(project, environ))

    async def __aenter__(self) -> PlaygroundClient:
        # No total timeout: streams last as long as runs do, a Host start up to its timeout.
        self._http = _session(self.settings, aiohttp.ClientTimeout(total=None, sock_connect=5))
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        if self._http is not None:
            await self._http.close()
            self._http = None

    @property
    def suites(self) -> SuiteClient:
        """Suites and suite runs (cli/suites_client.py)."""
        return SuiteClient(self)

    @property
    def http(self) -> aiohttp.ClientSession:
        if self._http is None:
            raise RuntimeError("use PlaygroundClient in `async with`")
        return self._http

    # -- any route -------------------------------------------------------------------------

    async def call(self, method: str, path: str, body: Any = None,
                   params: Mapping[str, str] | None = None) -> Any:
        """One API call (`path` under /api/playground/v1); its JSON answer."""
        return await self._request(method, API_PREFIX + path, body, params)

    async def events(self, path: str, params: Mapping[str, str] | None = None
                     ) -> AsyncGenerator[Event, None]:
        """An SSE route's events until the daemon ends the stream."""
        try:
            async with self.http.get(API_PREFIX + path, params=params) as resp:
                if resp.status >= 400:
                    raise api_error(resp.status, _body(await resp.read()))
                async for sse in aiter_sse(resp.content.iter_any()):
                    try:
                        event = Event.from_sse(sse)
                    except orjson.JSONDecodeError as exc:
                        raise PlaygroundError(f"the daemon sent a {sse.event} event that is "
                                              "not JSON") from exc
                    yield event
        except NETWORK_ERRORS as exc:
            raise _network_error(exc) from exc

    async def _request(self, method: str, url: str, body: Any,
                       params: Mapping[str, str] | None) -> Any:
        data = orjson.dumps(body) if body is not None else None
        try:
            async with self.http.request(method, url, data=data, params=params,
                                         headers=JSON_HEADERS) as resp:
                raw, status = await resp.read(), resp.status
        except NETWORK_ERRORS as exc:
            raise _network_error(exc) from exc
        doc = _body(raw)
        if status >= 400:
            raise api_error(status, doc)
        return doc

    # -- daemon, sessions, runs ------------------------------------------------------------

    async def health(self) -> Health:
        return cast(Health, await self._request("GET", "/health", None, None))

    async def sessions(self) -> list[Session]:
        """Every session, oldest first."""
        return cast(list[Session], await self._all("/sessions", "sessions"))

    async def create_session(self, title: str = "",
                             metadata: dict[str, Any] | None = None) -> Session:
        body: dict[str, Any] = {"title": title}
        if metadata:
            body["metadata"] = metadata
        return cast(Session, await self.call("POST", "/sessions", body))

    async def runs(self, session_id: str) -> list[Run]:
        """Every run of a session, oldest first."""
        return cast(list[Run], await self._all(f"/sessions/{session_id}/runs", "runs"))

    async def run(self, run_id: str) -> Run:
        return cast(Run, await self.call("GET", f"/runs/{run_id}"))

    async def create_run(self, session_id: str, parts: Sequence[InputPart], *,
                         metadata: dict[str, Any] | None = None,
                         changed_files: Sequence[str] | None = None,
                         revision: str | None = None) -> RunAccepted:
        """Start a run (queued; follow it with `stream`). ActiveRunConflict while another runs."""
        body = _run_request(parts, metadata, changed_files, revision)
        return cast(RunAccepted, await self.call("POST", f"/sessions/{session_id}/runs", body))

    async def resume(self, run_id: str, parts: Sequence[InputPart], *,
                     metadata: dict[str, Any] | None = None,
                     changed_files: Sequence[str] | None = None,
                     revision: str | None = None) -> RunAccepted:
        """Answer a run that ended `input_required`: a child run continues its task."""
        body = _run_request(parts, metadata, changed_files, revision)
        return cast(RunAccepted, await self.call("POST", f"/runs/{run_id}/resume", body))

    async def rerun(self, run_id: str, **edits: Any) -> RunAccepted:
        """The same input again, in a fresh conversation. Keyword edits (`parts`, `metadata`,
        `changed_files`, `label`) replace the stored field; the rest is cloned."""
        return cast(RunAccepted, await self.call("POST", f"/runs/{run_id}/rerun", edits))

    async def update_run(self, run_id: str, **fields: str | None) -> Run:
        """Set (or, with None, clear) a run's `label` and `note`; never its status or output."""
        return cast(Run, await self.call("PATCH", f"/runs/{run_id}", fields))

    async def update_session(self, session_id: str, **fields: Any) -> Session:
        """Change a session's `title` and/or `metadata`."""
        return cast(Session, await self.call("PATCH", f"/sessions/{session_id}", fields))

    async def lineage(self, run_id: str) -> Lineage:
        """The chain of resumes and the tree of reruns around a run."""
        return cast(Lineage, await self.call("GET", f"/runs/{run_id}/lineage"))

    async def cancel(self, run_id: str) -> RunAccepted:
        """Cancel the active run; `run_not_active` (409) when it is not the active one."""
        return cast(RunAccepted, await self.call("DELETE", f"/runs/{run_id}"))

    def stream(self, run_id: str, after: int | None = None) -> AsyncGenerator[Event, None]:
        """The run's events after event id `after` (all when None), live until its terminal
        `run.status`; replayed from history when the run is over."""
        params = {"after": str(after)} if after is not None else None
        return self.events(f"/runs/{run_id}/events", params)

    async def _all(self, path: str, key: str) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        params = {"limit": str(PAGE)}
        while True:
            page = await self.call("GET", path, params=params)
            items.extend(page[key])
            if not page.get("next_after"):
                return items
            params = {"limit": str(PAGE), "after": str(page["next_after"])}

    # -- the Host --------------------------------------------------------------------------

    async def host(self) -> HostStatus:
        return cast(HostStatus, await self.call("GET", "/host"))

    async def host_control(self, action: Literal["start", "stop", "restart"]) -> HostStatus:
        """Start, stop or restart the Host; stop and restart refuse during a run (409)."""
        return cast(HostStatus, await self.call("POST", f"/host/{action}"))

    async def host_logs(self, after: int = 0, limit: int = 5000) -> HostLogs:
        """Kept Host output lines after offset `after`; `next` is the offset to ask next."""
        params = {"after": str(after), "limit": str(limit)}
        return cast(HostLogs, await self.call("GET", "/host/logs", params=params))

    def follow_host_logs(self, after: int = 0) -> AsyncGenerator[Event, None]:
        """`log` events from offset `after`, live, until the caller stops reading."""
        return self.events("/host/logs", {"follow": "1", "after": str(after)})

    def project_events(self) -> AsyncGenerator[Event, None]:
        """The project-wide stream, live and endless: a `host.state` and `run.active`
        snapshot, then every Host state change and every run's `run.status`."""
        return self.events("/events")


def _run_request(parts: Sequence[InputPart], metadata: dict[str, Any] | None,
                 changed_files: Sequence[str] | None, revision: str | None) -> dict[str, Any]:
    body: dict[str, Any] = {"parts": list(parts)}
    if metadata is not None:
        body["metadata"] = metadata
    if changed_files is not None:
        body["changed_files"] = list(changed_files)
    if revision is not None:
        body["revision"] = revision
    return body


# -- finding and starting the daemon ---------------------------------------------------------

async def health(settings: Settings, timeout: float = 2.0) -> Health:
    """The daemon's /health, or DaemonNotRunning."""
    try:
        async with _session(settings, aiohttp.ClientTimeout(total=timeout)) as http:
            async with http.get("/health") as resp:
                return cast(Health, orjson.loads(await resp.read()))
    except (*NETWORK_ERRORS, orjson.JSONDecodeError) as exc:
        raise DaemonNotRunning(str(exc) or type(exc).__name__) from exc


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
                       timeout: float = 20.0) -> Health:
    """/health once the daemon answers; DaemonNotRunning if `proc` exits or time runs out."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return await health(settings, timeout=1.0)
        except DaemonNotRunning:
            if proc is not None and proc.poll() is not None:
                raise DaemonNotRunning(f"the daemon exited with code {proc.returncode}; "
                                       f"see {settings.runtime_dir / 'daemon.log'}") from None
            if time.monotonic() > deadline:
                if proc is not None:
                    end_process(proc)  # a daemon that never answered is not left behind
                raise
            await asyncio.sleep(0.05)


def end_process(proc: subprocess.Popen[bytes], grace: float = 5.0) -> None:
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
