"""Answers to requests the HTTP parser refuses (a header line without a colon, a 100 KB
header, 20,000 headers, a method `FOO`): our own `Server` header and a fixed JSON body.

aiohttp answers those itself, before any middleware or signal runs: `Server: Python/x.y
aiohttp/x.y.z` and a text body that echoes what it could not parse (the request line, the
header). `PlainRunner` is an `AppRunner` whose connections answer them as every other
error is answered (`{"detail": {"error", "message"}}`), saying only the status's phrase.
"""

from __future__ import annotations

from http import HTTPStatus

import orjson
from aiohttp import web
from aiohttp.web_protocol import RequestHandler
from aiohttp.web_request import BaseRequest

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


class PlainRequestHandler(RequestHandler):
    """aiohttp's connection handler, answering its own errors plainly (still logged)."""

    def handle_error(self, request: BaseRequest, status: int = 500,
                     exc: BaseException | None = None,
                     message: str | None = None) -> web.StreamResponse:
        """aiohttp's handling (it logs; it raises when the answer had begun), then the house's
        plain error answer for `status`."""
        super().handle_error(request, status, exc, message)  # logs; raises if mid-answer
        return plain_error(status)


class PlainServer(web.Server):
    """A `web.Server` whose connections are `handler_class`es (a subclass names its own)."""

    handler_class: type[PlainRequestHandler] = PlainRequestHandler

    def __call__(self) -> RequestHandler:
        return self.handler_class(self, loop=self._loop, **self._kwargs)


class PlainRunner(web.AppRunner):
    """`web.AppRunner` serving with a `server_class` (a subclass names its own)."""

    server_class: type[PlainServer] = PlainServer

    async def _make_server(self) -> web.Server:
        server = await super()._make_server()
        server.__class__ = self.server_class  # the same object, its connections ours
        return server
