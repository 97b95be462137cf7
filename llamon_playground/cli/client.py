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
from collections.abc import AsyncGenerator, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, Self, cast
from urllib.parse import quote

import aiohttp
import orjson
from multidict import MultiDict

from llamon_playground.cli.api_requests import InputPart
from llamon_playground.cli.api_types import (
    ComposerSchema,
    Health,
    HistoryDeleted,
    HostLogs,
    HostStatus,
    Lineage,
    Part,
    Run,
    RunAccepted,
    SearchResults,
    Session,
    Snippets,
    SourceTarget,
)
from llamon_playground.cli.connect import (
    NETWORK_ERRORS,
    answer_body,
    ensure_daemon,
    health,
    network_error,
    socket_session,
    spawn_daemon,
    wait_healthy,
)
from llamon_playground.cli.discovery import DaemonInfo, list_daemons
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
    "PlaygroundError", "Run", "RunAccepted", "SearchResults", "Session", "ensure_daemon",
    "health", "spawn_daemon", "text_part", "wait_healthy", "list_daemons", "DaemonInfo",
]

PAGE = 1000  # the API's largest page
JSON_HEADERS = {"Content-Type": "application/json"}


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

    async def __aenter__(self) -> Self:
        # No total timeout: streams last as long as runs do, a Host start up to its timeout.
        self._http = socket_session(self.settings,
                                    aiohttp.ClientTimeout(total=None, sock_connect=5))
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
        """The open HTTP session; RuntimeError outside `async with`."""
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
                    raise api_error(resp.status, answer_body(await resp.read()))
                async for sse in aiter_sse(resp.content.iter_any()):
                    try:
                        event = Event.from_sse(sse)
                    except orjson.JSONDecodeError as exc:
                        raise PlaygroundError(f"the daemon sent a {sse.event} event that is "
                                              "not JSON") from exc
                    yield event
        except NETWORK_ERRORS as exc:
            raise network_error(exc) from exc

    async def _request(self, method: str, url: str, body: Any,
                       params: Mapping[str, str] | None) -> Any:
        data = orjson.dumps(body) if body is not None else None
        try:
            async with self.http.request(method, url, data=data, params=params,
                                         headers=JSON_HEADERS) as resp:
                raw, status = await resp.read(), resp.status
        except NETWORK_ERRORS as exc:
            raise network_error(exc) from exc
        doc = answer_body(raw)
        if status >= 400:
            raise api_error(status, doc)
        return doc

    # -- daemon, sessions, runs ------------------------------------------------------------

    async def health(self) -> Health:
        """The daemon's health answer."""
        return cast(Health, await self._request("GET", "/health", None, None))

    async def sessions(self) -> list[Session]:
        """Every session, oldest first."""
        return cast(list[Session], await self._all("/sessions", "sessions"))

    async def create_session(self, title: str = "",
                             metadata: dict[str, Any] | None = None) -> Session:
        """A new session, with a title and optional metadata."""
        body: dict[str, Any] = {"title": title}
        if metadata:
            body["metadata"] = metadata
        return cast(Session, await self.call("POST", "/sessions", body))

    async def runs(self, session_id: str) -> list[Run]:
        """Every run of a session, oldest first."""
        return cast(list[Run], await self._all(f"/sessions/{session_id}/runs", "runs"))

    async def run(self, run_id: str) -> Run:
        """One run as the daemon knows it now."""
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

    async def compare(self, left: str, right: str) -> dict[str, Any]:
        """Two runs side by side: status, duration, text diff, data changes, scores."""
        return cast(dict[str, Any], await self.call("GET", "/compare",
                                                    params={"left": left, "right": right}))

    async def delete_session(self, session_id: str) -> dict[str, Any]:
        """Delete a session and its runs; 409 while it holds the active run."""
        return cast(dict[str, Any], await self.call("DELETE", f"/sessions/{session_id}"))

    async def delete_all(self) -> HistoryDeleted:
        """Delete all history (every session, run, event and suite); 409 during a run."""
        return cast(HistoryDeleted, await self.call("DELETE", "/sessions"))

    async def snippets(self, run_id: str) -> Snippets:
        """Copy curl / Copy Python of a run (a resumed run's: its chain, to a fresh task)."""
        return cast(Snippets, await self.call("GET", f"/runs/{run_id}/snippets"))

    async def composer_schema(self) -> ComposerSchema:
        """The project's input composer: a Flow's contract tabs, or the text composer."""
        return cast(ComposerSchema, await self.call("GET", "/composer-schema"))

    async def source_target(self, node_id: str) -> SourceTarget:
        """File, line and column of a Flow node's function."""
        return cast(SourceTarget, await self.call(
            "GET", f"/source-targets/{quote(node_id, safe='')}"))

    async def export_bundle(self, path: Path, session_ids: Sequence[str] = (),
                            run_ids: Sequence[str] = ()) -> int:
        """Write a bundle of the chosen sessions and runs (all history when none) to `path`,
        streamed as it comes; its size in bytes."""
        body: dict[str, Any] = {}
        if session_ids:
            body["session_ids"] = list(session_ids)
        if run_ids:
            body["run_ids"] = list(run_ids)
        size = 0
        try:
            async with self.http.post(API_PREFIX + "/bundles/export", data=orjson.dumps(body),
                                      headers=JSON_HEADERS) as resp:
                if resp.status >= 400:
                    raise api_error(resp.status, answer_body(await resp.read()))
                # The client's own loop, nothing else on it: plain writes, one chunk each.
                with open(path, "wb") as out:  # noqa: ASYNC230
                    async for chunk in resp.content.iter_any():
                        out.write(chunk)
                        size += len(chunk)
        except NETWORK_ERRORS as exc:
            raise network_error(exc) from exc
        return size

    async def stream_part(self, run_id: str, side: Literal["input", "output"], index: int,
                          start: int = 0) -> AsyncGenerator[bytes, None]:
        """The whole of one part of a run (a cut part's `content_url`), from byte `start`,
        as it arrives: a 217 MB answer is never held here whole."""
        url = f"{API_PREFIX}/runs/{run_id}/{side}/{index}/content"
        headers = {"Range": f"bytes={start}-"} if start else None
        try:
            async with self.http.get(url, headers=headers) as resp:
                if resp.status >= 400:
                    raise api_error(resp.status, answer_body(await resp.read()))
                async for chunk in resp.content.iter_any():
                    yield chunk
        except NETWORK_ERRORS as exc:
            raise network_error(exc) from exc

    async def part_content(self, run_id: str, side: Literal["input", "output"],
                           index: int) -> bytes:
        """The whole of one part of a run, in memory (see stream_part for a large one)."""
        return b"".join([chunk async for chunk in self.stream_part(run_id, side, index)])

    async def import_bundle(self, path: Path) -> dict[str, Any]:
        """Import a bundle file; the ids it was given (`{"sessions": {old: new}, "runs"}`)."""
        data = await asyncio.to_thread(path.read_bytes)
        try:
            async with self.http.post(API_PREFIX + "/bundles/import", data=data,
                                      headers=JSON_HEADERS) as resp:
                raw, status = await resp.read(), resp.status
        except NETWORK_ERRORS as exc:
            raise network_error(exc) from exc
        doc = answer_body(raw)
        if status >= 400:
            raise api_error(status, doc)
        return cast(dict[str, Any], doc)

    async def search(self, words: str = "", *, status: Sequence[str] = (),
                     reason: Sequence[str] = (), labelled: bool = False,
                     evaluator_failed: bool = False, session: str | None = None,
                     after: str | None = None, limit: int = 50) -> SearchResults:
        """One page of runs matching `words` and the filters, newest first; pass the
        answer's `next_after` as `after` for the next page (docs/api.md, "Search")."""
        params: list[tuple[str, str]] = [("q", words), ("limit", str(limit))]
        params += [("status", s) for s in status] + [("reason", r) for r in reason]
        if labelled:
            params.append(("labelled", "1"))
        if evaluator_failed:
            params.append(("evaluator_failed", "1"))
        if session is not None:
            params.append(("session", session))
        if after is not None:
            params.append(("after", after))
        return cast(SearchResults, await self._request("GET", API_PREFIX + "/search", None,
                                                       MultiDict(params)))

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
        """The Host's status."""
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
