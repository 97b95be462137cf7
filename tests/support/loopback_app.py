"""A Host stand-in for unit tests: an aiohttp app served on a loopback port the kernel chose,
for as long as an `async with` block runs."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from aiohttp import web


@asynccontextmanager
async def serving(app: web.Application) -> AsyncIterator[str]:
    """`app` on 127.0.0.1 at a free port; its base URL (`http://127.0.0.1:PORT`)."""
    runner = web.AppRunner(app)
    await runner.setup()
    try:
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        port = runner.addresses[0][1]  # the port the kernel chose
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()
