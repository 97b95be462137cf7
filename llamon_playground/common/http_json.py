"""JSON out, for both processes: a response body and the one error shape of the API.

Every 4xx/5xx answer is `{"detail": {"error": code, "message": ..., **extra}}`.
"""

from __future__ import annotations

from typing import Any

import orjson
from aiohttp import web


def json_response(data: Any, status: int = 200) -> web.Response:
    return web.Response(body=orjson.dumps(data), status=status,
                        content_type="application/json")


def error_response(status: int, code: str, message: str, **extra: Any) -> web.Response:
    return json_response({"detail": {"error": code, "message": message, **extra}}, status)
