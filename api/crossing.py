"""What crosses from a client to the daemon and back, whichever transport carries it.

The front has two (docs/front-transport.md): its own pooled client with streams lent to the
daemon (api/relay.py, api/handover.py), and a plain aiohttp client (api/plain.py). Both
pass on the same headers, keep small answers whole, and say the same when the daemon
cannot be reached, so switching between them changes how bytes travel, not what a client
sees.

Only named headers cross: the client's Authorization and Cookie (the front's token) never
reach the daemon, and nothing like Access-Control-Allow-Origin comes back.
"""

from __future__ import annotations

import logging

import orjson
from aiohttp import web

from llamon_playground.common.http_json import public_reason
from llamon_playground.common.request_context import HEADER as REQUEST_ID_HEADER
from llamon_playground.common.request_context import REQUEST_ID

log = logging.getLogger(__name__)

# Range and If-Range up, Accept-Ranges and Content-Range back: a run's part is fetched whole
# or a range at a time (GET /runs/{id}/{side}/{index}/content, GET /files/{sha256}).
REQUEST_HEADERS = ("Content-Type", "Accept", "Last-Event-ID", "Range", "If-Range")
RESPONSE_HEADERS = frozenset(name.lower() for name in (
    "Content-Type", "Cache-Control", "Content-Disposition", "X-Accel-Buffering", "Location",
    "X-Content-Type-Options", "Content-Security-Policy", "Allow", "Accept-Ranges",
    "Content-Range", "Last-Modified", "ETag"))
# A request body up to this size is read whole and sent with its head; an answer of known
# size up to it goes out in one write. Larger ones stream.
WHOLE_BODY_LIMIT = 256 * 1024


def request_headers(request: web.Request) -> list[tuple[str, str]]:
    """The headers that go up: the request's id and the named ones the client sent."""
    headers = [(REQUEST_ID_HEADER, request[REQUEST_ID])]
    for name in REQUEST_HEADERS:
        value = request.headers.get(name)
        if value is not None:
            headers.append((name, value))
    return headers


def response_headers(headers: list[tuple[str, str]]) -> dict[str, str]:
    """The daemon's answer headers a client gets."""
    return {name: value for name, value in headers if name.lower() in RESPONSE_HEADERS}


def daemon_unavailable(exc: BaseException) -> web.Response:
    # The socket's path stays in the log: a client learns the reason, not the machine's paths.
    log.info("daemon not reachable: %s", exc)
    message = (f"the Playground daemon is not reachable ({public_reason(exc)}); start it with "
               "`llamon-playground up`")
    body = {"detail": {"error": "daemon_unavailable", "message": message}}
    return web.Response(status=503, body=orjson.dumps(body), content_type="application/json")
