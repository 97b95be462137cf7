"""Composition root of the front process."""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import AsyncIterator

import aiohttp
from aiohttp import web

from daemon.config import Settings

from .guard import check_bind_address
from .relay import UPSTREAM, relay

log = logging.getLogger(__name__)


def make_front_app(settings: Settings) -> web.Application:
    app = web.Application(client_max_size=settings.max_request_bytes)

    async def upstream_ctx(app: web.Application) -> AsyncIterator[None]:
        # A fresh connection per failure: when the daemon restarts, the pool reconnects.
        connector = aiohttp.UnixConnector(path=str(settings.socket_path), limit=0)
        session = aiohttp.ClientSession(
            connector=connector, base_url="http://daemon", auto_decompress=False,
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=5))
        app[UPSTREAM] = session
        yield
        await session.close()

    app.cleanup_ctx.append(upstream_ctx)
    app.router.add_route("*", "/api/playground/v1/{tail:.*}", relay)
    app.router.add_route("GET", "/health", relay)
    return app


async def run_front(settings: Settings, host: str, port: int,
                    ready: asyncio.Event | None = None) -> None:
    check_bind_address(host)
    app = make_front_app(settings)
    runner = web.AppRunner(app, handle_signals=False, access_log=None, handler_cancellation=True,
                           shutdown_timeout=1.0)
    await runner.setup()
    try:
        site = web.TCPSite(runner, host, port, reuse_address=True)
        await site.start()
        bound = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        url_host = f"[{host}]" if ":" in host else host
        print(f"llamon Playground front: http://{url_host}:{bound}/  "
              f"(project {settings.project_dir})", flush=True)
        if ready is not None:
            ready.set()
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        try:
            await stop.wait()
        finally:
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(sig)
    finally:
        await runner.cleanup()
