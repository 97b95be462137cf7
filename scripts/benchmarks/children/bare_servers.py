"""`python -m scripts.benchmarks.children.bare_servers KIND`: an HTTP server that answers every request
with the same small `202` a run's creation gets, and does nothing else; it prints its port,
then serves on 127.0.0.1 until SIGTERM.

`run_create_202` times these beside the real POSTs, with the same client, to show what the
HTTP alone costs on this machine at that moment: KIND `asyncio` is a bare asyncio
Protocol (the least any Python server can cost: a wake-up, a read, a write), KIND
`aiohttp` is aiohttp's web server with one route and no middleware (what each of the
front and the daemon costs before any code of ours runs).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import AsyncIterator

from aiohttp import web

from scripts.benchmarks.stack import REPO

BODY = b'{"run_id":"run_00000000000000000000000000000000","status":"queued"}'
ANSWER = (b"HTTP/1.1 202 Accepted\r\nContent-Type: application/json\r\n"
          b"Content-Length: %d\r\n\r\n%s" % (len(BODY), BODY))


class Bare(asyncio.Protocol):
    """One answer per request head (and its Content-Length body), kept alive."""

    def __init__(self) -> None:
        self._buffer = b""
        self._transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        while (end := self._buffer.find(b"\r\n\r\n")) >= 0:
            length = 0
            for line in self._buffer[:end].split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            if len(self._buffer) < end + 4 + length:
                return
            self._buffer = self._buffer[end + 4 + length:]
            assert self._transport is not None
            self._transport.write(ANSWER)


async def accepted(request: web.Request) -> web.Response:
    await request.read()
    return web.Response(status=202, body=BODY, content_type="application/json")


async def serve(kind: str) -> None:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    if kind == "asyncio":
        server = await loop.create_server(Bare, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
    else:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", accepted)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        port = runner.addresses[0][1]
    print(port, flush=True)
    await stop.wait()


@contextlib.asynccontextmanager
async def bare_server(kind: str) -> AsyncIterator[str]:
    """One of them in a process group of its own, stopped (and reaped) on the way out; its
    base URL."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "scripts.benchmarks.children.bare_servers", kind, cwd=REPO,
        stdout=asyncio.subprocess.PIPE, start_new_session=True)
    try:
        assert proc.stdout is not None
        line = await asyncio.wait_for(proc.stdout.readline(), 10)
        if not line.strip().isdigit():
            raise RuntimeError(f"the bare {kind} server did not start: {line!r}")
        yield f"http://127.0.0.1:{int(line)}"
    finally:
        if proc.returncode is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                await asyncio.wait_for(proc.wait(), 5)
            except TimeoutError:
                os.killpg(proc.pid, signal.SIGKILL)
                await proc.wait()


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in ("asyncio", "aiohttp"):
        sys.exit("usage: python -m scripts.benchmarks.children.bare_servers asyncio|aiohttp")
    asyncio.run(serve(sys.argv[1]))
