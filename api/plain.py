"""The front's plain transport: aiohttp's own client on the daemon's Unix socket.

`LLAMON_PLAYGROUND_FRONT_TRANSPORT=plain` runs the front on this instead of its fast one
(api/relay.py, api/upstream.py, api/handover.py): every request, streams included, is
relayed by reading the daemon's answer and writing it to the client, through a
`ClientSession` on a `UnixConnector`. Nothing is lent and nothing of the HTTP is ours:
a baseline to bisect a bug against, at the cost measured in docs/front-transport.md.

The door in front of it is the same (api/door.py), and so is what crosses
(api/crossing.py). As in the fast relay, a client that disconnects cancels the handler,
which closes that connection to the daemon; a body of unknown length is counted against
its limit on the way up.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import aiohttp
from aiohttp import web
from yarl import URL

from llamon_playground.api.crossing import (
    WHOLE_BODY_LIMIT,
    daemon_unavailable,
    request_headers,
    response_headers,
)
from llamon_playground.api.door import DOOR
from llamon_playground.api.limits import BodyTooLarge, body_limit, limited

log = logging.getLogger(__name__)

PLAIN_UPSTREAM = web.AppKey("plain_upstream", aiohttp.ClientSession)
CONNECT_TIMEOUT = 5.0
# aiohttp's client adds these unless told not to; the daemon gets only what crossing.py names.
NOT_ADDED = frozenset({"User-Agent", "Accept", "Accept-Encoding", "Content-Type"})
NO_BODY_STATUSES = frozenset({204, 304})


def plain_session(socket_path: str) -> aiohttp.ClientSession:
    """Kept-alive connections to the daemon, as many as the relays running at once (the
    front's own connection cap bounds them); no total timeout: a stream lasts."""
    return aiohttp.ClientSession(
        connector=aiohttp.UnixConnector(path=socket_path, limit=0),
        timeout=aiohttp.ClientTimeout(total=None, connect=CONNECT_TIMEOUT),
        skip_auto_headers=NOT_ADDED, auto_decompress=False,
        cookie_jar=aiohttp.DummyCookieJar())


async def plain_relay(request: web.Request) -> web.StreamResponse:
    """Send the request to the daemon and pass its answer on."""
    over: list[BodyTooLarge] = []
    headers = [(name, _sendable(value)) for name, value in request_headers(request)]
    data: bytes | AsyncIterator[bytes] | None = None
    if request.body_exists:
        length = request.content_length
        if length is not None and length <= WHOLE_BODY_LIMIT:
            data = await request.read()
        elif length is not None:  # checked against its limit by the door
            headers.append(("Content-Length", str(length)))
            data = request.content.iter_any()
        else:  # chunked: counted on the way, and sent chunked
            data = _counted(limited(request.content, body_limit(
                request.app[DOOR].settings, request.method, request.path)), over)
    url = URL("http://daemon" + request.rel_url.raw_path_qs, encoded=True)
    try:
        upstream = await request.app[PLAIN_UPSTREAM].request(
            request.method, url, headers=headers, data=data, allow_redirects=False)
    except (aiohttp.ClientConnectionError, OSError, TimeoutError) as exc:
        # Not reachable, or it died mid-request. An answer that is not HTTP (a bug, not an
        # outage) goes on up: the door's 500, as in the fast relay.
        if over:
            raise over[0] from None  # the door answers 413
        return daemon_unavailable(exc)
    try:
        answer = await _answer(request, upstream)
    except BaseException:
        upstream.close()  # cancelled (the client left) or failed: never back to the pool
        raise
    upstream.release()
    return answer


def _sendable(value: str) -> str:
    """A header value as aiohttp's client can send it. Bytes that are not UTF-8 reach the
    front as surrogates, which the client would drop (an invalid `Last-Event-ID` would
    arrive empty, and so be ignored): they go up as U+FFFD, still refused by the daemon
    as the fast transport's raw bytes are."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return value.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    return value


async def _counted(body: AsyncIterator[bytes], over: list[BodyTooLarge]) -> AsyncIterator[bytes]:
    """`body`, remembering a BodyTooLarge: aiohttp's client hides what broke an upload
    behind an error of its own."""
    try:
        async for chunk in body:
            yield chunk
    except BodyTooLarge as exc:
        over.append(exc)
        raise


async def _answer(request: web.Request,
                  upstream: aiohttp.ClientResponse) -> web.StreamResponse:
    headers = response_headers(list(upstream.headers.items()))
    length = upstream.content_length
    if (upstream.status in NO_BODY_STATUSES or request.method == "HEAD"
            or (length is not None and length <= WHOLE_BODY_LIMIT)):
        try:
            data = await upstream.read()
        except (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError, OSError) as exc:
            return daemon_unavailable(exc)  # it went away mid-answer
        return web.Response(status=upstream.status, reason=upstream.reason, headers=headers,
                            body=data)
    response = web.StreamResponse(status=upstream.status, reason=upstream.reason,
                                  headers=headers)
    if length is not None:
        response.content_length = length
    await response.prepare(request)
    while True:
        try:
            data = await upstream.content.readany()
        except (aiohttp.ClientError, OSError) as exc:
            # The daemon went away mid-answer: end ours too, the client reconnects by cursor.
            log.info("upstream broke during %s %s: %s", request.method, request.path, exc)
            if request.transport is not None:
                request.transport.close()
            return response
        if not data:
            break
        try:
            await response.write(data)
        except ConnectionResetError:  # the client left mid-answer: nobody to answer
            return response
    try:
        await response.write_eof()
    except ConnectionResetError:
        pass  # the client left as the answer ended
    return response
