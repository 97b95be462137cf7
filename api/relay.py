"""Relays one request to the daemon's Unix socket over a pooled connection (api/upstream.py).

A stream is not relayed: its connection is lent to the daemon, which writes the answer on
it (api/handover.py), when the daemon takes it.

The request goes up as one write of its head and, when small, its body; a larger body
streams up (a chunked one counted against its limit on the way). The answer comes back as
the daemon's own bytes: a small one of known size in one write with its head, anything
else (SSE, downloads) passed on as it arrives, its chunk framing untouched, at the pace the
client reads. A client that disconnects cancels this handler (handler_cancellation), which
closes the upstream connection; the daemon never cancels a run for that.

This is the front's fast transport; api/plain.py is the plain one, and api/crossing.py
what both let through (docs/front-transport.md).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

from aiohttp import web

from llamon_playground.api.aiohttp_adapter import pass_chunks_through
from llamon_playground.api.crossing import (
    WHOLE_BODY_LIMIT,
    daemon_unavailable,
    request_headers,
    response_headers,
)
from llamon_playground.api.door import DOOR
from llamon_playground.api.handover import hand_over, wants_handover
from llamon_playground.api.limits import body_limit, limited
from llamon_playground.api.upstream import (
    Connection,
    Head,
    Pool,
    UpstreamClosed,
    UpstreamError,
)

log = logging.getLogger(__name__)

UPSTREAM = web.AppKey("upstream", Pool)
# A request the daemon cannot have acted on twice: sent again when a kept-alive connection
# turns out to have been closed under it (the daemon restarted, or timed it out).
IDEMPOTENT = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})


def request_head(request: web.Request, extra: str) -> bytes:
    """The head that goes to the daemon: the named headers, plus `extra` (a line of the
    front's own: the body's framing, or a lent connection's Connection: close)."""
    # An HTTP/1.0 client gets an HTTP/1.0 answer from the daemon (not chunked): passed on
    # as it is, like any other.
    lines = [f"{request.method} {request.rel_url.raw_path_qs} HTTP/1.{request.version.minor}",
             "Host: daemon", *(f"{name}: {value}" for name, value in request_headers(request))]
    if extra:
        lines.append(extra)
    return ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8", "surrogateescape")


async def relay(request: web.Request) -> web.StreamResponse:
    if wants_handover(request):
        # The daemon writes the answer's head, so it must know that this client asked for
        # the connection to end with it (relayed, the front's own answer says so).
        handed = await hand_over(request, str(request.app[DOOR].settings.handover_path),
                                 request_head(request, "" if request.keep_alive
                                              else "Connection: close"))
        if handed is not None:
            return handed
    body = b""
    stream: AsyncIterator[bytes] | None = None
    framing = ""
    if request.body_exists:
        length = request.content_length
        if length is not None and length <= WHOLE_BODY_LIMIT:
            body = await request.read()
            framing = f"Content-Length: {len(body)}"
        elif length is not None:  # checked against its limit by the door
            stream, framing = request.content.iter_any(), f"Content-Length: {length}"
        else:  # chunked: counted on the way
            stream = limited(request.content, body_limit(request.app[DOOR].settings,
                                                         request.method, request.path))
            framing = "Transfer-Encoding: chunked"
    pool = request.app[UPSTREAM]
    try:
        conn, head = await _exchange(pool, request.method, request_head(request, framing) + body,
                                     stream, chunked=length_unknown(request))
    except (OSError, UpstreamClosed, TimeoutError) as exc:
        # Not reachable, or it died mid-request (reset, broken pipe, closed early).
        return daemon_unavailable(exc)
    try:
        answer = await _answer(request, conn, head)
    except BaseException:
        conn.close()  # cancelled (the client left) or failed: never back to the pool
        raise
    pool.release(conn)
    return answer


def length_unknown(request: web.Request) -> bool:
    return request.body_exists and request.content_length is None


async def _exchange(pool: Pool, method: str, first: bytes, stream: AsyncIterator[bytes] | None,
                    chunked: bool) -> tuple[Connection, Head]:
    conn = await pool.acquire()
    try:
        while True:
            conn.begin(first, expect_body=method != "HEAD")
            if stream is not None:
                await _send_body(conn, stream, chunked)
            try:
                return conn, await conn.head()
            except UpstreamClosed:
                if conn.used == 1 or stream is not None or method not in IDEMPOTENT:
                    raise
                log.debug("a kept-alive connection to the daemon was closed; reconnecting")
                conn.close()
                conn = await pool.acquire(fresh=True)
    except BaseException:
        conn.close()
        raise


async def _send_body(conn: Connection, stream: AsyncIterator[bytes], chunked: bool) -> None:
    async for chunk in stream:
        if chunk:
            conn.write(b"%x\r\n%s\r\n" % (len(chunk), chunk) if chunked else chunk)
            await conn.drain()
    if chunked:
        conn.write(b"0\r\n\r\n")


async def _answer(request: web.Request, conn: Connection, head: Head) -> web.StreamResponse:
    headers = response_headers(head.headers)
    if not head.chunked and (conn.complete or (head.length is not None
                             and head.length <= WHOLE_BODY_LIMIT)):
        # A small answer of known size (or none) goes out as one write, head and body
        # together: each send is a syscall, and syscalls are most of a relayed request's cost.
        try:
            data = await conn.read_all()
        except UpstreamClosed as exc:
            return daemon_unavailable(exc)  # it went away mid-answer
        return web.Response(status=head.status, reason=head.reason, headers=headers, body=data)
    response = web.StreamResponse(status=head.status, reason=head.reason, headers=headers)
    if head.length is not None:
        response.content_length = head.length
    writer = await response.prepare(request)
    if head.chunked:
        # The daemon's chunks go out as they came, framing included: nothing is decoded and
        # encoded again. (The client speaks HTTP/1.1 here: an HTTP/1.0 one was relayed as
        # HTTP/1.0, and the daemon answered it unchunked.)
        pass_chunks_through(writer)
    try:
        while data := await conn.read():
            await response.write(data)
    except UpstreamError as exc:
        # The daemon went away mid-answer: end ours too, the client reconnects by cursor.
        log.info("upstream broke during %s %s: %s", request.method, request.path, exc)
        if request.transport is not None:
            request.transport.close()
        return response
    await response.write_eof()
    return response
