"""JSON and SSE over aiohttp: the daemon socket (direct) and a front (TCP, with its token)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import aiohttp
import orjson

from llamon_playground.common.contract import API_PREFIX, RunStatus
from scripts.benchmarks.stack import Stack

P = API_PREFIX
COMPLETED = f'"status":"{RunStatus.COMPLETED}"'.encode()  # in a run.status frame


def front_headers(stack: Stack) -> dict[str, str]:
    """What the stack's fronts ask for: its token as a bearer."""
    return {"Authorization": f"Bearer {stack.token}"}


def front_session(stack: Stack, url: str) -> aiohttp.ClientSession:
    return aiohttp.ClientSession(base_url=url, headers=front_headers(stack))


def direct_session(stack: Stack, limit: int = 100) -> aiohttp.ClientSession:
    return aiohttp.ClientSession(
        connector=aiohttp.UnixConnector(path=str(stack.settings.socket_path), limit=limit),
        base_url="http://daemon")


class FrontUnavailable(RuntimeError):
    """The front could not be started or does not let the benchmark in."""


async def start_checked_front(stack: Stack) -> tuple[int, str, dict[str, str]]:
    """Start a front, check that an authenticated GET through it works; (pid, url, headers)."""
    try:
        front, url = stack.start_front()
    except Exception as exc:
        raise FrontUnavailable(f"the front did not start: {exc}") from exc
    headers = front_headers(stack)
    async with aiohttp.ClientSession(base_url=url, headers=headers) as http:
        try:
            async with http.get(f"{P}/sessions") as resp:
                body = await resp.read()
                if resp.status != 200:
                    raise FrontUnavailable(f"GET /sessions through the front answered "
                                           f"{resp.status}: {body[:200]!r}")
        except aiohttp.ClientError as exc:
            raise FrontUnavailable(f"the front does not answer: {exc}") from exc
    return front.pid, url, headers


async def call(http: aiohttp.ClientSession, method: str, path: str, body: Any = None,
               want: int | tuple[int, ...] = 200, timeout: float = 60.0) -> Any:
    """One JSON request; `path` is absolute or relative to the API prefix. Raises unless the
    answer's status is in `want`."""
    wants = (want,) if isinstance(want, int) else want
    data = orjson.dumps(body) if body is not None else None
    headers = {"Content-Type": "application/json"} if data is not None or method != "GET" else {}
    async with http.request(method, path if path.startswith("/") else f"{P}/{path}", data=data,
                            headers=headers,
                            timeout=aiohttp.ClientTimeout(total=timeout)) as resp:
        raw = await resp.read()
        if resp.status not in wants:
            raise RuntimeError(f"{method} {path} answered {resp.status}: {raw[:300]!r}")
        return orjson.loads(raw) if raw else None


async def start_run(http: aiohttp.ClientSession, session_id: str, text: str,
                    wait_s: float = 30.0) -> str:
    """POST a run; retry 409 while the previous run's lock is not released yet (bounded)."""
    body = orjson.dumps({"parts": [{"kind": "text", "text": text}]})
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        async with http.post(f"{P}/sessions/{session_id}/runs", data=body,
                             headers={"Content-Type": "application/json"}) as resp:
            raw = await resp.read()
            if resp.status == 202:
                return str(orjson.loads(raw)["run_id"])
            if resp.status != 409:
                raise RuntimeError(f"POST runs answered {resp.status}: {raw[:300]!r}")
        await asyncio.sleep(0.01)
    raise RuntimeError("the previous run never released the run lock")


async def count_sse(http: aiohttp.ClientSession, run_id: str) -> tuple[int, bytes, int]:
    """Read a run's SSE stream to its end; count frames in the raw bytes (no JSON parsing):
    (frames, the last 400 bytes, bytes read)."""
    count = 0
    total = 0
    tail = b"\n"
    last = b""
    async with http.get(f"{P}/runs/{run_id}/events",
                        timeout=aiohttp.ClientTimeout(total=300)) as resp:
        if resp.status != 200:
            raise RuntimeError(f"events answered {resp.status}: {await resp.text()}")
        async for chunk in resp.content.iter_any():
            buf = tail + chunk
            count += buf.count(b"\nid: ")
            tail = buf[-4:]
            total += len(chunk)
            last = (last + chunk)[-400:]
    return count, last, total
