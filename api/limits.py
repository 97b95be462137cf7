"""Request body limits per route, enforced by the front before anything is parsed.

Most routes take a small JSON body. A run may carry inline files (10 MB each, as base64),
and a bundle import carries every blob of the bundle, so those get more: which routes is
declared once, with the daemon's other facts about its routes (common/wire/routes.py).
A declared Content-Length over the limit is refused at once; a chunked body is counted
while it is relayed and cut off at the limit.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from aiohttp import StreamReader

from llamon_playground.common.config import Settings
from llamon_playground.common.wire.routes import IMPORT_BODY_BYTES, Body, front_routes

MIB = 1024 * 1024
SMALL_BODY = 1 * MIB
IMPORT_BODY = IMPORT_BODY_BYTES


class BodyTooLarge(Exception):
    """A chunked body grew past its route's limit while it was relayed."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"the request body is larger than {limit} bytes")
        self.limit = limit


def body_limit(settings: Settings, method: str, path: str) -> int:
    """The largest body `method path` takes (the routes' declaration says which are large)."""
    kind = front_routes().body(method, path)
    if kind is Body.IMPORT:
        return IMPORT_BODY
    if kind is Body.RUN:
        return settings.max_request_bytes
    return SMALL_BODY


def check_declared(content_length: int | None, limit: int) -> None:
    if content_length is not None and content_length > limit:
        raise BodyTooLarge(limit)


async def limited(content: StreamReader, limit: int) -> AsyncIterator[bytes]:
    """The body as it arrives, raising BodyTooLarge past `limit` bytes."""
    size = 0
    async for chunk in content.iter_any():
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge(limit)
        yield chunk
