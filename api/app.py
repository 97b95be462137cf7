"""Composition root of the front process."""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

from aiohttp import web

from llamon_playground.api.aiohttp_adapter import choose_transport
from llamon_playground.api.auth import TokenAuth
from llamon_playground.api.connections import CappedSite, QuietAccept
from llamon_playground.api.door import DOOR, Door, door_middleware
from llamon_playground.api.guard import bind_address, check_bind_address, url_name
from llamon_playground.api.page import add_page_routes
from llamon_playground.api.plain import PLAIN_UPSTREAM, plain_relay, plain_session
from llamon_playground.api.relay import UPSTREAM, relay
from llamon_playground.api.slots import SLOTS, Slots, end_on_rotation
from llamon_playground.api.token_store import TokenLease, acquire_token
from llamon_playground.api.upstream import Pool
from llamon_playground.common.config import Settings, project_key
from llamon_playground.common.contract import API_PREFIX
from llamon_playground.common.fd_budget import connection_cap
from llamon_playground.common.http_json import name_the_server
from llamon_playground.common.request_context import echo_request_id
from llamon_playground.common.stop_signal import wait_for_stop_signal

log = logging.getLogger(__name__)
API = API_PREFIX
REFUSALS_EVERY = 10.0  # how often the door's refusal counts are checked (each says a minute)
NO_AUTH_WARNING = ("WARNING: --no-auth: the front asks for no token; any local process or web "
                   "page that reaches {url} can use the Playground and run the project's code")


@dataclass(frozen=True)
class FrontOptions:
    """How a front listens and whether it asks for the token: what `up` and the service set."""

    host: str = "127.0.0.1"
    port: int = 8765
    auth: bool = True
    show_token_url: bool = False  # `up` prints the URL with the token; a service never does


def make_front_app(settings: Settings, door: Door, transport: str) -> web.Application:
    """The front's app: the door, the page, and every API request relayed on `transport`."""
    app = web.Application(middlewares=[door_middleware], client_max_size=settings.max_request_bytes)
    app[DOOR] = door
    app[SLOTS] = Slots(settings.front.head_timeout,
                       connection_cap(settings.front.max_connections))
    app.on_response_prepare.append(echo_request_id)
    name_the_server(app)

    # Kept-alive connections to the daemon; when it restarts, they reconnect. The transport
    # is a setting (docs/front-transport.md): the door above is the same either way.
    plain = transport == "plain"
    handler = plain_relay if plain else relay

    async def upstream_ctx(app: web.Application) -> AsyncIterator[None]:
        pool = Pool(str(settings.socket_path))
        app[UPSTREAM] = pool
        yield
        pool.close()

    async def plain_upstream_ctx(app: web.Application) -> AsyncIterator[None]:
        async with plain_session(str(settings.socket_path)) as session:
            app[PLAIN_UPSTREAM] = session
            yield

    app.cleanup_ctx.append(plain_upstream_ctx if plain else upstream_ctx)
    app.cleanup_ctx.append(_rotation_ctx)
    app.cleanup_ctx.append(_refusals_ctx)
    add_page_routes(app)
    app.router.add_route("*", API + "/{tail:.*}", handler)
    app.router.add_route("GET", "/health", handler)
    return app


async def _rotation_ctx(app: web.Application) -> AsyncIterator[None]:
    auth = app[DOOR].auth
    if auth is None or auth.source is None:  # no token, or one that never changes
        yield
        return
    task = asyncio.create_task(end_on_rotation(auth, app[SLOTS]))
    yield
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def _refusals_ctx(app: web.Application) -> AsyncIterator[None]:
    """The door's refusal counts said once a minute, and what is left at shutdown."""
    refusals = app[DOOR].refusals

    async def every_minute() -> None:
        while True:
            await asyncio.sleep(REFUSALS_EVERY)
            refusals.flush()
    task = asyncio.create_task(every_minute())
    yield
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    refusals.flush(force=True)


async def run_front(settings: Settings, options: FrontOptions,
                    ready: asyncio.Event | None = None,
                    serving: Callable[[str], None] | None = None,
                    stop: asyncio.Event | None = None) -> None:
    """Serve the front until stopped (SIGTERM/SIGINT, or `stop` set): refuse a non-loopback
    bind, take the token (when auth is on), then serve the door; `ready` is set once it
    listens, and `serving` is called with its URL then (the foreground `up` records it and
    starts watching its daemon: the front runs in `up`'s own loop)."""
    check_bind_address(options.host)
    lease: TokenLease | None = acquire_token(settings) if options.auth else None
    try:
        source = lease.source() if lease else None
        auth = TokenAuth(lease.token, project=project_key(settings.project_dir),
                         source=source.current if source else None) if lease else None
        door = Door(settings, auth, bind=options.host)
        await _serve(settings, options, door, ready, serving, stop or asyncio.Event())
    finally:
        if lease is not None:
            lease.release()


async def _serve(settings: Settings, options: FrontOptions, door: Door,
                 ready: asyncio.Event | None, serving: Callable[[str], None] | None,
                 stop: asyncio.Event) -> None:
    # auto_decompress off: a compressed body reaches the door as sent, to be refused (415).
    # keepalive_timeout: aiohttp's timer runs from a connection's start, so it bounds both a
    # client that never finishes its headers and one idle between requests; one the door
    # has not admitted yet gets the shorter head timeout (api/slots.py).
    transport = await choose_transport(settings.front.transport)  # warns if it falls back
    runner = web.AppRunner(make_front_app(settings, door, transport), handle_signals=False,
                           handler_cancellation=True, shutdown_timeout=1.0)
    await runner.setup()
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(QuietAccept(loop))
    site = CappedSite(runner, bind_address(options.host), options.port, runner.app[SLOTS],
                      access_log=None, auto_decompress=False,
                      keepalive_timeout=settings.front.idle_timeout)
    try:
        await site.start()
        door.port = site.port

        def announce() -> None:  # once SIGTERM/SIGINT already stop us cleanly
            url = f"http://{url_name(options.host)}:{door.port}/"
            # Tools parse this line: keep its shape (the URL never carries the token).
            print(f"llamon Playground front: {url}  (project {settings.project_dir})",
                  flush=True)
            if settings.front.transport != "fast":  # asked for (a fallback said so already)
                log.warning("front transport: %s (LLAMON_PLAYGROUND_FRONT_TRANSPORT)",
                            settings.front.transport)
            _announce_auth(settings, door, url, options)
            if ready is not None:
                ready.set()
            if serving is not None:
                serving(url)
        await wait_for_stop_signal(announce, stop)
    finally:
        await site.stop()
        await runner.cleanup()


def _announce_auth(settings: Settings, door: Door, url: str, options: FrontOptions) -> None:
    if door.auth is None:
        print(NO_AUTH_WARNING.format(url=url), file=sys.stderr, flush=True)
        log.warning("token auth is off (--no-auth)")
    elif options.show_token_url:
        print(f"open in a browser: {url}?token={door.auth.token}", flush=True)
    else:
        print(f"token: `llamon-playground token {settings.project_dir}` "
              f"(kept in {settings.front_token_path})", flush=True)
