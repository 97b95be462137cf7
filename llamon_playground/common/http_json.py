"""JSON out, for both processes: a response body and the one error shape of the API.

Every 4xx/5xx answer is `{"detail": {"error": code, "message": ..., **extra}}`. And the one
test for a number a client sent as text (`decimal_digits`).
"""

from __future__ import annotations

import re
from typing import Any

import orjson
from aiohttp import web


def decimal_digits(text: str) -> bool:
    """ASCII 0-9 only: `str.isdigit` also takes "²" and other digits `int()` refuses, which
    would turn a bad query or header into a 500."""
    return text.isascii() and text.isdigit()


def json_response(data: Any, status: int = 200) -> web.Response:
    """`data` as a JSON answer with `status`."""
    return web.Response(body=orjson.dumps(data), status=status,
                        content_type="application/json")


def error_response(status: int, code: str, message: str, **extra: Any) -> web.Response:
    """The house's error answer: `{"detail": {"error": code, "message": message, ...extra}}` with
    `status`."""
    return json_response({"detail": {"error": code, "message": message, **extra}}, status)


def http_error_response(exc: web.HTTPException) -> web.Response:
    """aiohttp's own 4xx (no route, wrong method) in the API's error shape; a 405 keeps the
    `Allow` header that says which methods the path takes."""
    code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status, "http_error")
    response = error_response(exc.status, code, exc.reason)
    if "Allow" in exc.headers:
        response.headers["Allow"] = exc.headers["Allow"]
    return response


# An absolute path in an error text (a socket, the database) says more about the machine
# than a client needs: it goes, the reason stays.
_PATH = re.compile(r"(?<![\w.])/[^\s'\"(),;]+")


def public_reason(exc: BaseException) -> str:
    """Why `exc` happened, for an API answer: its OS reason, without file paths."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    cause = getattr(exc, "os_error", None)  # aiohttp's connector errors wrap the OSError
    if isinstance(cause, OSError) and cause.strerror:
        return cause.strerror
    return _PATH.sub("<path>", str(exc)) or type(exc).__name__


SERVER = "llamon-playground"


async def _plain_server(_request: web.Request, response: web.StreamResponse) -> None:
    response.headers["Server"] = SERVER


def name_the_server(app: web.Application) -> None:
    """`Server: llamon-playground` instead of aiohttp's `Python/x.y aiohttp/x.y.z`: which
    versions run here is nobody's business."""
    app.on_response_prepare.append(_plain_server)
