"""SSE for one run: replay from SQLite after the cursor, then live, with no gap or duplicate;
and how every stream of the daemon ends with its connection.

Hand-over is by seq: the live log only holds committed events, so anything the log does
not cover (below its floor) is already in SQLite, and the cursor skips what was sent.

The daemon does not cancel a handler whose client left (aiohttp's handler_cancellation is
off): a run's creation whose client went away must still start the run it committed. A
stream only writes, though, and left running it would learn of its lost connection at its
next write, an event or a keep-alive up to 15 s later, and a daemon stopping meanwhile
would wait out its shutdown timeout for it. So `prepare_stream` tells the daemon's
connection handler (`StreamEndingHandler`, served by `serve_unix`) which task streams on
it, and the handler cancels that task the moment its connection is lost: a client that
hangs up, or a front that lets a lent one go.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from aiohttp import web

from llamon_playground.common.http_json import decimal_digits
from llamon_playground.common.parser_errors import PlainRequestHandler, connection_factory
from llamon_playground.daemon.errors import BadRequest
from llamon_playground.daemon.store.database import Store
from llamon_playground.daemon.store.event_log import EventHub, RunLog

KEEPALIVE = b": keep-alive\n\n"
# A browser's EventSource waits its own reconnection time (3 s in Chromium) before it opens
# a dropped stream again, a front or daemon restart included; the page's own reconnects
# start at 0.5 s (api/page/connection.js), and a stream asks for the same. It sets only
# the reconnection time: no event is dispatched for it.
RECONNECT = b"retry: 500\n\n"
REPLAY_PAGE = 2000


def cursor_value(name: str, raw: str | None) -> int | None:
    """A cursor as a client sent it (`Last-Event-ID` or `?after=`): None when absent or
    empty, `400 invalid_cursor` when it is not a whole number of at most 18 digits."""
    if raw is None or raw == "":
        return None
    if not decimal_digits(raw) or len(raw) > 18:
        raise BadRequest(f"{name} must be a non-negative integer event id",
                         code="invalid_cursor")
    return int(raw)


def last_event_id(request: web.Request) -> int | None:
    return cursor_value("Last-Event-ID", request.headers.get("Last-Event-ID"))


def parse_cursor(request: web.Request) -> int:
    """The larger of Last-Event-ID and ?after= (docs/api.md, "Events (SSE)")."""
    sent = (last_event_id(request), cursor_value("after", request.query.get("after")))
    return max((value for value in sent if value is not None), default=0)


async def prepare_stream(request: web.Request) -> web.StreamResponse:
    connection = request.protocol
    if isinstance(connection, StreamEndingHandler):
        connection.stream = asyncio.current_task()
    response = web.StreamResponse(headers={
        "Content-Type": "text/event-stream",
        "Cache-Control": "no-cache",
        "X-Accel-Buffering": "no",
    })
    await response.prepare(request)
    try:
        await response.write(RECONNECT)
    except ConnectionError:
        pass  # gone already: the stream's first write says so, as it always could
    return response


async def stream_run(response: web.StreamResponse, store: Store, hub: EventHub, run_id: str,
                     cursor: int, *, run_is_terminal: bool, keepalive: float) -> None:
    """Write every event of `run_id` after `cursor`, then follow live until the run ends."""
    log: RunLog | None = hub.get(run_id)
    # While one replay page is written, SQLite already builds the next (it releases the GIL).
    prefetch: asyncio.Task[tuple[bytes, int, bool]] | None = None
    try:
        while True:
            if prefetch is None and log is not None and log.covers(cursor):
                frames = log.after(cursor)
                if frames:
                    await response.write(b"".join(f.data for f in frames))
                    cursor = frames[-1].seq
                    if frames[-1].terminal:
                        return
                    continue
                if log.closed:
                    return
                if not await log.wait_after(cursor, keepalive):
                    await response.write(KEEPALIVE)
                continue
            page = prefetch if prefetch is not None else store.frames_after(
                run_id, cursor, REPLAY_PAGE)
            prefetch = None
            data, last, terminal = await page
            if data:
                if not terminal:
                    prefetch = asyncio.ensure_future(
                        store.frames_after(run_id, last, REPLAY_PAGE))
                await response.write(data)
                cursor = last
                if terminal:
                    return
                continue
            # SQLite has nothing more. Either the run is live (follow its log) or it is over.
            log = hub.get(run_id)
            if log is None:
                if run_is_terminal:
                    return
                # Not live any more: it ended after the caller looked, so its terminal event
                # is committed now; one more read from SQLite delivers it.
                run_is_terminal = True
    finally:
        if prefetch is not None:
            prefetch.cancel()
            await asyncio.gather(prefetch, return_exceptions=True)


class StreamEndingHandler(PlainRequestHandler):
    """The daemon's connection handler: a stream's handler is cancelled with its connection."""

    # The task of the stream running on this connection (prepare_stream); once that stream
    # is over it is done, and cancelling it does nothing.
    stream: asyncio.Task[object] | None = None

    def connection_lost(self, exc: BaseException | None) -> None:
        super().connection_lost(exc)
        if self.stream is not None:
            self.stream.cancel()
            self.stream = None


async def serve_unix(runner: web.AppRunner, path: str,
                     **options: Any) -> tuple[asyncio.Server, Callable[[], StreamEndingHandler]]:
    """Serve `runner`'s app on the Unix socket `path`, each connection a
    `StreamEndingHandler` made with `options` (RequestHandler's keyword arguments). Returns
    the listening server (close it before `runner.cleanup()`) and the connection factory,
    which serves lent connections too (daemon/http/adopt.py)."""
    factory = connection_factory(runner, StreamEndingHandler, **options)
    server = await asyncio.get_running_loop().create_unix_server(factory, path)
    return server, factory
