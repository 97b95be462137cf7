"""Relays one request to the daemon's Unix socket, streaming both bodies.

Nothing is buffered whole: the request body streams up, the answer streams down chunk by
chunk (SSE included). A client that disconnects cancels this handler (handler_cancellation),
which closes the upstream connection; the daemon never cancels a run for that.

Only named headers cross: the client's Authorization and Cookie (the front's token) never
reach the daemon, and nothing like Access-Control-Allow-Origin comes back.
"""

from __future__ import annotations

import logging

import aiohttp
import orjson
from aiohttp import web

from llamon_playground.api.door import DOOR
from llamon_playground.api.limits import BodyTooLarge, body_limit, limited
from llamon_playground.common.http_json import public_reason
from llamon_playground.common.request_context import HEADER as REQUEST_ID_HEADER
from llamon_playground.common.request_context import REQUEST_ID

log = logging.getLogger(__name__)

UPSTREAM = web.AppKey("upstream", aiohttp.ClientSession)
REQUEST_HEADERS = ("Content-Type", "Accept", "Last-Event-ID", "Content-Length")
RESPONSE_HEADERS = ("Content-Type", "Cache-Control", "Content-Disposition", "X-Accel-Buffering",
                    "Location", "X-Content-Type-Options", "Content-Security-Policy", "Allow")


WHOLE_BODY_LIMIT = 256 * 1024


def daemon_unavailable(exc: BaseException) -> web.Response:
    # The socket's path stays in the log: a client learns the reason, not the machine's paths.
    log.info("daemon not reachable: %s", exc)
    message = (f"the Playground daemon is not reachable ({public_reason(exc)}); start it with "
               "`llamon-playground up`")
    body = {"detail": {"error": "daemon_unavailable", "message": message}}
    return web.Response(status=503, body=orjson.dumps(body), content_type="application/json")


async def relay(request: web.Request) -> web.StreamResponse:
    upstream = request.app[UPSTREAM]
    headers = {h: request.headers[h] for h in REQUEST_HEADERS if h in request.headers}
    headers[REQUEST_ID_HEADER] = request[REQUEST_ID]
    data = None
    if request.body_exists:
        # A declared length was checked by the door; a chunked body is counted on the way.
        data = request.content if request.content_length is not None else limited(
            request.content, body_limit(request.app[DOOR].settings, request.method,
                                        request.path))
    try:
        up = await upstream.request(request.method, request.rel_url, headers=headers, data=data,
                                    allow_redirects=False)
    except (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError) as exc:
        if isinstance(exc.__cause__, BodyTooLarge):  # aiohttp wraps what the body raised
            raise exc.__cause__ from None
        # Not reachable, or it died mid-request (reset, broken pipe, closed early).
        return daemon_unavailable(exc)
    except (FileNotFoundError, ConnectionRefusedError) as exc:
        return daemon_unavailable(exc)
    try:
        headers = {name: up.headers[name] for name in RESPONSE_HEADERS if name in up.headers}
        if up.content_length is not None and up.content_length <= WHOLE_BODY_LIMIT:
            # A small answer of known size goes out as one write (headers and body together):
            # each send is a syscall, and syscalls are most of a relayed request's cost.
            try:
                body = await up.read()
            except (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError) as exc:
                return daemon_unavailable(exc)  # it went away mid-answer
            return web.Response(status=up.status, reason=up.reason, headers=headers, body=body)
        response = web.StreamResponse(status=up.status, reason=up.reason, headers=headers)
        if up.content_length is not None:
            response.content_length = up.content_length
        await response.prepare(request)
        try:
            async for chunk in up.content.iter_any():
                await response.write(chunk)
        except (aiohttp.ClientPayloadError, aiohttp.ServerDisconnectedError) as exc:
            # The daemon went away mid-answer: end ours too, the client reconnects by cursor.
            log.info("upstream broke during %s %s: %s", request.method, request.path, exc)
            if request.transport is not None:
                request.transport.close()
            return response
        await response.write_eof()
        return response
    finally:
        up.release()
