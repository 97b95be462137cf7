"""The daemon's connection handler (daemon/http/sse.py, StreamEndingHandler) over a real Unix socket:
a stream's handler is cancelled the moment its client hangs up; any other handler runs to its
end though its client left (a create must still start the run it committed)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from aiohttp import web

from llamon_playground.daemon.http.sse import prepare_stream, serve_unix
from tests.support.waiting import eventually


class Probe:
    """What the two handlers did: started, and how each ended."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.gate = asyncio.Event()
        self.ended: list[str] = []

    async def stream(self, request: web.Request) -> web.StreamResponse:
        response = await prepare_stream(request)
        self.started.set()
        try:
            await asyncio.Event().wait()  # nothing to write, ever: no write finds the loss
        except asyncio.CancelledError:
            self.ended.append("cancelled")
            raise
        return response

    async def work(self, request: web.Request) -> web.Response:
        self.started.set()
        await self.gate.wait()
        self.ended.append("finished")
        return web.Response(status=202)


@asynccontextmanager
async def served(folder: Path, probe: Probe) -> AsyncIterator[str]:
    app = web.Application()
    app.router.add_get("/stream", probe.stream)
    app.router.add_post("/work", probe.work)
    runner = web.AppRunner(app, shutdown_timeout=1.0)
    await runner.setup()
    path = str(folder / "d.sock")
    try:
        server, _ = await serve_unix(runner, path, access_log=None)
        try:
            yield path
        finally:
            server.close()
    finally:
        await runner.cleanup()


async def hang_up_once_started(path: str, request: bytes, probe: Probe) -> None:
    _, writer = await asyncio.open_unix_connection(path)
    writer.write(request)
    await writer.drain()
    await asyncio.wait_for(probe.started.wait(), 10)
    writer.close()
    await writer.wait_closed()


async def test_a_stream_ends_the_moment_its_client_hangs_up(tmp_path: Path) -> None:
    probe = Probe()
    async with served(tmp_path, probe) as path:
        await hang_up_once_started(path, b"GET /stream HTTP/1.1\r\nHost: d\r\n\r\n", probe)
        await eventually(lambda: probe.ended, lambda ended: ended == ["cancelled"])


async def test_any_other_handler_runs_to_its_end_after_its_client_left(tmp_path: Path) -> None:
    probe = Probe()
    async with served(tmp_path, probe) as path:
        await hang_up_once_started(
            path, b"POST /work HTTP/1.1\r\nHost: d\r\nContent-Length: 0\r\n\r\n", probe)
        probe.gate.set()
        await eventually(lambda: probe.ended, lambda ended: ended == ["finished"])
