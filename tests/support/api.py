"""A small async client for the Playground API (over the front's TCP URL or the daemon socket)."""

from __future__ import annotations

import asyncio
import io
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson

from llamon_playground.common.contract import API_PREFIX, TERMINAL_STATUSES
from llamon_playground.common.sse import aiter_sse
from tests.support.waiting import eventually

P = API_PREFIX
TERMINAL = {status.value for status in TERMINAL_STATUSES}
# The front asks for a token. Stack.start_front records each front's token here
# by URL, so Api.for_url(url) authenticates without every test passing the token along.
FRONT_TOKENS: dict[str, str] = {}
LARGE_BODY = 1024 * 1024  # larger bodies go as a file object (aiohttp warns on bytes)


@dataclass
class SseEvent:
    id: int
    event: str
    data: dict[str, Any]


class Api:
    def __init__(self, http: aiohttp.ClientSession) -> None:
        self.http = http

    @classmethod
    def for_url(cls, base_url: str, token: str | None = None) -> Api:
        token = token or FRONT_TOKENS.get(base_url.rstrip("/"))
        headers = {"Authorization": f"Bearer {token}"} if token else None
        return cls(aiohttp.ClientSession(base_url=base_url, headers=headers))

    @classmethod
    def for_socket(cls, path: str) -> Api:
        return cls(aiohttp.ClientSession(connector=aiohttp.UnixConnector(path=path),
                                         base_url="http://daemon"))

    async def close(self) -> None:
        await self.http.close()

    async def call(self, method: str, path: str, body: Any = None,
                   raw: bytes | None = None, headers: dict[str, str] | None = None
                   ) -> tuple[int, Any]:
        data: Any = raw if raw is not None else (orjson.dumps(body) if body is not None else None)
        if isinstance(data, bytes) and len(data) > LARGE_BODY:  # aiohttp warns on large bytes
            data = io.BytesIO(data)
        hdrs = {"Content-Type": "application/json", **(headers or {})}
        async with self.http.request(method, path if path.startswith("/") else P + "/" + path,
                                     data=data, headers=hdrs) as resp:
            text = await resp.read()
            try:
                return resp.status, orjson.loads(text) if text else None
            except orjson.JSONDecodeError:
                return resp.status, text

    async def ok(self, method: str, path: str, body: Any = None, status: int = 200) -> Any:
        code, doc = await self.call(method, path, body)
        assert code == status, (method, path, code, doc)
        return doc

    async def session(self) -> str:
        return (await self.ok("POST", "sessions", {"title": "t"}, 201))["id"]

    async def start_run(self, session_id: str, text: str, **extra: Any) -> str:
        body = {"parts": [{"kind": "text", "text": text}], **extra}
        return (await self.ok("POST", f"sessions/{session_id}/runs", body, 202))["run_id"]

    async def run(self, run_id: str) -> dict[str, Any]:
        return await self.ok("GET", f"runs/{run_id}")  # type: ignore[no-any-return]

    async def wait_status(self, run_id: str, statuses: set[str] | None = None,
                          timeout: float = 60.0) -> dict[str, Any]:
        """Follow the run's SSE stream until it closes, then read the run."""
        wanted = statuses or TERMINAL
        await asyncio.wait_for(self.events(run_id), timeout)
        return await eventually(lambda: self.run(run_id), lambda run: run["status"] in wanted,
                                f"run {run_id} to become one of {sorted(wanted)}", timeout)

    async def first_output(self, run_id: str) -> None:
        """Wait until the run has streamed its first output.delta (it is mid-run then)."""
        async for event in self.stream(run_id):
            if event.event == "output.delta":
                return
        raise AssertionError(f"run {run_id} ended before any output")

    async def events(self, run_id: str, after: int | None = None,
                     last_event_id: int | None = None, limit: int | None = None,
                     timeout: float = 60.0) -> list[SseEvent]:
        """Read the run's SSE stream until it ends (or `limit` events)."""
        events: list[SseEvent] = []
        async for ev in self.stream(run_id, after=after, last_event_id=last_event_id,
                                    timeout=timeout):
            events.append(ev)
            if limit is not None and len(events) >= limit:
                break
        return events

    async def stream(self, run_id: str, after: int | None = None,
                     last_event_id: int | None = None, timeout: float = 60.0
                     ) -> AsyncIterator[SseEvent]:
        params = {"after": str(after)} if after is not None else {}
        headers = {"Last-Event-ID": str(last_event_id)} if last_event_id is not None else {}
        async with self.http.get(f"{P}/runs/{run_id}/events", params=params, headers=headers,
                                 timeout=aiohttp.ClientTimeout(total=timeout)) as resp:
            if resp.status == 204:  # a finished run with nothing after the cursor
                return
            assert resp.status == 200, await resp.text()
            assert resp.headers["Content-Type"].startswith("text/event-stream")
            async for ev in parse_sse(resp):
                yield ev


async def parse_sse(resp: aiohttp.ClientResponse) -> AsyncIterator[SseEvent]:
    """The body's events (common/sse.py parses); every event here carries an id."""
    async for event in aiter_sse(resp.content.iter_any()):
        assert event.id is not None, event
        yield SseEvent(int(event.id), event.event, orjson.loads(event.data))
