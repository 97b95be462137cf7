"""The run-creation benchmark's bare servers (scripts/benchmarks/children/bare_servers.py): each, as
its own process, answers every request on one kept-alive connection with the create-sized
202, whatever the body, and is gone once its block ends."""

from __future__ import annotations

from types import SimpleNamespace

import aiohttp
import orjson
import pytest

from scripts.benchmarks.children.bare_servers import BODY, bare_server


@pytest.mark.parametrize("kind", ["asyncio", "aiohttp"])
async def test_a_bare_server_answers_each_request_with_the_202(kind: str) -> None:
    opened: list[object] = []

    async def on_open(_: aiohttp.ClientSession, __: SimpleNamespace, params: object) -> None:
        opened.append(params)
    trace = aiohttp.TraceConfig()
    trace.on_connection_create_end.append(on_open)
    async with bare_server(kind) as url, \
            aiohttp.ClientSession(base_url=url, trace_configs=[trace]) as http:
        for body in (b'{"parts": []}', b"", b"x" * 70_000):
            async with http.post("/sessions/s/runs", data=body) as resp:
                assert resp.status == 202
                assert await resp.read() == BODY
    assert len(opened) == 1  # kept alive: one connection for the three
    assert orjson.loads(BODY)["status"] == "queued"


async def test_a_bare_server_is_gone_after_its_block() -> None:
    async with bare_server("asyncio") as url:
        pass
    async with aiohttp.ClientSession() as http:
        with pytest.raises(aiohttp.ClientConnectionError):
            async with http.get(url):
                pass
