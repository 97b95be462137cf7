"""JSON in for the daemon's routes: size-limited bodies, bounded query integers; and the
binding of each declared route to its handler."""

from __future__ import annotations

import asyncio
import importlib
import secrets
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
from aiohttp import web

from llamon_playground.common.http_json import decimal_digits
from llamon_playground.common.wire.routes import served_by
from llamon_playground.daemon.data.bundle_json import (
    loads_putting_keys_back,
    refuse_lone_surrogates,
)
from llamon_playground.daemon.data.long_strings import (
    decode_span,
    is_key,
    long_string_spans,
    put_back,
    skeleton,
)
from llamon_playground.daemon.errors import BadRequest, PayloadTooLarge


async def read_body(request: web.Request, max_bytes: int) -> bytearray:
    """The request's body bytes, read into one buffer; 413 before reading an oversized one
    (by Content-Length) or as soon as more than `max_bytes` arrived."""
    if request.content_length is not None and request.content_length > max_bytes:
        raise PayloadTooLarge(f"request body is larger than {max_bytes} bytes")
    raw = bytearray()
    async for chunk in request.content.iter_any():
        if len(raw) + len(chunk) > max_bytes:
            raise PayloadTooLarge(f"request body is larger than {max_bytes} bytes")
        raw += chunk
    return raw


async def read_json(request: web.Request, max_bytes: int) -> Any:
    """The request's JSON body (None when empty); 413 before reading an oversized one."""
    raw = await read_body(request, max_bytes)
    return parse_json(raw) if raw.strip() else None


async def read_object(request: web.Request, max_bytes: int) -> dict[str, Any] | None:
    """The body's JSON object (None when there is no body); `null`, a list or a number is
    400 invalid_request: bodies are JSON objects, as the OpenAPI document says."""
    raw = await read_body(request, max_bytes)
    if not raw.strip():
        return None
    doc = await asyncio.to_thread(parse_long_json, raw) if len(raw) > LONG_BODY \
        else parse_json(raw)
    if not isinstance(doc, dict):
        raise BadRequest("the request body must be a JSON object", code="invalid_request")
    return doc


def parse_json(raw: bytes | bytearray) -> Any:
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise BadRequest(f"request body is not valid JSON: {exc}", code="invalid_json") from exc
    if has_long_digit_run(raw) and _has_huge_integer(doc):
        raise BadRequest("request body holds an integer beyond 64 bits", code="invalid_json")
    return doc


# A run body may be 16 MiB, most of it one text or one file's base64: `orjson.loads` reads
# such a string in one C call, the GIL held throughout (the loop stood still ~50 ms, far
# longer on a busy machine). A body over LONG_BODY is parsed in a thread with its long
# strings cut out and decoded a slice at a time (data/long_strings.py), so the loop gets
# the GIL between slices.
LONG_BODY = 1 << 20


def parse_long_json(raw: bytes | bytearray) -> Any:
    """What parse_json answers for `raw`, no C call covering more than a slice of it.
    Blocking: call it in a thread."""
    spans = long_string_spans(raw)
    if not spans:
        return parse_json(raw)
    marker = f"\x00{secrets.token_hex(16)}:"
    texts = [decode_span(raw, start, end) for start, end in spans]
    if any(is_key(raw, end) for _, end in spans):
        # A long key is put back as its object is made, so that a repeated key keeps the
        # document's last value (orjson has no such hook; the skeleton is small).
        try:
            doc = loads_putting_keys_back(skeleton(raw, spans, marker).decode("utf-8"),
                                          marker, texts.__getitem__)
        except (ValueError, RecursionError) as exc:
            raise BadRequest(f"request body is not valid JSON: {exc}",
                             code="invalid_json") from exc
    else:
        doc = parse_json(skeleton(raw, spans, marker))
    doc = put_back(doc, marker, texts.__getitem__)
    refuse_lone_surrogates(raw, doc)
    return doc


# orjson reads an integer beyond 64 bits as a float, losing digits silently: such a body
# is refused instead. Only bodies with a 19+ digit run are walked (cheap for the rest):
# -9223372036854775809 is one past the smallest int64 with 19 digits.
LONG_DIGIT_RUN = 19
# Every digit becomes "1" (other bytes stay what they are, none of them "1"): a run of 19
# digits is then one C-speed find. A regex took 250 ms over a 15 MiB body, GIL held.
_DIGITS_AS_ONES = bytes.maketrans(b"0123456789", b"1" * 10)
_SLICE = 1 << 20  # one translate + find at a time (~1 ms), then the GIL may change hands


def has_long_digit_run(raw: bytes | bytearray) -> bool:
    """Whether `raw` holds 19 or more ASCII digits in a row; slices overlap by a run's
    length so a run cut by a slice's end is still seen."""
    needle = b"1" * LONG_DIGIT_RUN
    step = _SLICE - LONG_DIGIT_RUN
    return any(raw[start:start + _SLICE].translate(_DIGITS_AS_ONES).find(needle) != -1
               for start in range(0, max(len(raw), 1), step))
INT64_LIMIT = 2.0 ** 64


def _has_huge_integer(doc: Any) -> bool:
    stack = [doc]
    while stack:
        value = stack.pop()
        if isinstance(value, float):
            if abs(value) >= INT64_LIMIT / 2 and value.is_integer():
                return True
        elif isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return False


def int_query(request: web.Request, name: str, default: int, maximum: int,
              minimum: int = 0) -> int:
    """A bounded non-negative integer query parameter; anything else is 400 invalid_query."""
    raw = request.query.get(name)
    if raw is None:
        return default
    if not decimal_digits(raw) or len(raw) > 12 or int(raw) < minimum:
        raise BadRequest(f"`{name}` must be an integer of at least {minimum}",
                         code="invalid_query")
    return min(int(raw), maximum)


def limit_query(request: web.Request, default: int, maximum: int) -> int:
    """A page size, `?limit` from 1 to `maximum`: anything else is 400 invalid_query (a
    larger page is refused, not silently cut, so a client learns the contract)."""
    raw = request.query.get("limit")
    if raw is None:
        return default
    if not decimal_digits(raw) or len(raw) > 12 or not 1 <= int(raw) <= maximum:
        raise BadRequest(f"`limit` must be an integer from 1 to {maximum}",
                         code="invalid_query")
    return int(raw)


def choice_query(request: web.Request, name: str, choices: tuple[str, ...]) -> str:
    """A query parameter that is one of `choices` (the first when it is not given);
    anything else is 400 invalid_query."""
    raw = request.query.get(name)
    if raw is None:
        return choices[0]
    if raw not in choices:
        raise BadRequest(f"`{name}` must be one of {', '.join(choices)}", code="invalid_query")
    return raw


def bind(app: web.Application, group: str, handlers: object) -> None:
    """Serve every route the one route declaration (common/wire/routes.py) gives `group`,
    each with the method of `handlers` it names."""
    for route in served_by(group):
        app.router.add_route(route.method, route.full_path, getattr(handlers, route.name))


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def bind_on_first_use(app: web.Application, group: str, module: str) -> None:
    """`bind`, with each handler looked up in `module` imported on the first request: for
    routes seldom asked, whose module would otherwise stay loaded as long as the daemon
    lives. (The import runs once, on the loop: a module that loads in milliseconds.)"""
    for route in served_by(group):
        app.router.add_route(route.method, route.full_path, _deferred(module, route.name))


def _deferred(module: str, name: str) -> Handler:
    async def handler(request: web.Request) -> web.StreamResponse:
        answer: Handler = getattr(importlib.import_module(module), name)
        return await answer(request)
    return handler
