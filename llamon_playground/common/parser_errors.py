"""Answers to requests the HTTP parser refuses (a header line without a colon, a 100 KB
header, 20,000 headers, a method `FOO`): our own `Server` header and a fixed JSON body.

aiohttp answers those itself, before any middleware or signal runs: `Server: Python/x.y
aiohttp/x.y.z` and a text body that echoes what it could not parse (the request line, the
header). A `PlainRequestHandler` answers them as every other error is answered
(`{"detail": {"error", "message"}}`), saying only the status's phrase.

aiohttp's runner has no public way to name its connections' class, so the servers that use
one (the daemon's sockets, the front's site) make their connections themselves with
`connection_factory`: aiohttp's public `RequestHandler`, made for the runner's public
`server`, with the options the runner would have passed it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from http import HTTPStatus
from typing import Any, TypeVar

import orjson
from aiohttp import web

from llamon_playground.common.http_json import SERVER


def plain_error(status: int) -> web.Response:
    """The fixed answer for `status`: its code and phrase, nothing of the request."""
    try:
        phrase = HTTPStatus(status).phrase
    except ValueError:
        phrase = "Error"
    code = "bad_request" if status == 400 else phrase.lower().replace(" ", "_")
    body = orjson.dumps({"detail": {"error": code, "message": f"{phrase}: the request "
                                    "could not be parsed as HTTP/1.1" if status == 400
                                    else phrase}})
    response = web.Response(status=status, body=body, content_type="application/json",
                            headers={"Server": SERVER})
    response.force_close()
    return response


class PlainRequestHandler(web.RequestHandler):
    """aiohttp's connection handler, answering its own errors plainly (still logged)."""

    def handle_error(self, request: web.BaseRequest, status: int = 500,
                     exc: BaseException | None = None,
                     message: str | None = None) -> web.StreamResponse:
        """aiohttp's handling (it logs; it raises when the answer had begun), then the house's
        plain error answer for `status`."""
        super().handle_error(request, status, exc, message)  # logs; raises if mid-answer
        return plain_error(status)


H = TypeVar("H", bound=PlainRequestHandler)


def connection_factory(runner: web.BaseRunner, handler_class: type[H],
                       **options: Any) -> Callable[[], H]:
    """The protocol factory of a server serving `runner`'s app: each connection a
    `handler_class`, made with `options` (RequestHandler's keyword arguments: keep-alive
    timeout, access log, decompression). Call it once `runner.setup()` is done."""
    server = runner.server
    if server is None:
        raise RuntimeError("connection_factory needs a runner that is set up")
    loop = asyncio.get_running_loop()
    return lambda: handler_class(server, loop=loop, **options)
