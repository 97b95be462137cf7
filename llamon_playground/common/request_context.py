"""Request ids and log context for HTTP handlers (daemon and front).

The front gives every request an id (or keeps a sane one the client sent), passes it to the
daemon in `X-Request-Id`, and both echo it back, so one id follows a request through both
logs. A route with `{run_id}` also tags its log lines with that run.
"""

from __future__ import annotations

import itertools
import re
import secrets
from collections.abc import Awaitable, Callable

from aiohttp import web

from llamon_playground.common.logging_setup import log_context

HEADER = "X-Request-Id"
REQUEST_ID = web.RequestKey("request_id", str)
_SANE = re.compile(r"[A-Za-z0-9._:-]{1,64}")
_RUN_IN_PATH = re.compile(r"/runs/([A-Za-z0-9_-]{1,64})(?:/|$)")
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


_PREFIX = "req_" + secrets.token_hex(4) + "_"
_counter = itertools.count(1)


def new_request_id() -> str:
    """Unique per process lifetime: a random prefix and a counter (no syscall per request)."""
    return f"{_PREFIX}{next(_counter)}"


def request_id_of(request: web.Request) -> str:
    """The client's id when it is short and plain (it ends up in logs), else a new one."""
    given = request.headers.get(HEADER, "")
    return given if _SANE.fullmatch(given) else new_request_id()


def run_id_in(request: web.Request) -> str | None:
    """The run a request is about: its route's `{run_id}`, else `/runs/<id>` in the path (the
    front relays everything through one catch-all route)."""
    run_id = request.match_info.get("run_id")
    if run_id is None and (match := _RUN_IN_PATH.search(request.path)):
        run_id = match[1]
    return run_id


async def echo_request_id(request: web.Request, response: web.StreamResponse) -> None:
    """on_response_prepare: every answer, streams included, names its request id."""
    rid = request.get(REQUEST_ID)
    if rid is not None:
        response.headers[HEADER] = rid


@web.middleware
async def request_context_middleware(request: web.Request,
                                     handler: Handler) -> web.StreamResponse:
    rid = request_id_of(request)
    request[REQUEST_ID] = rid
    with log_context(request_id=rid, run_id=run_id_in(request)):
        return await handler(request)


def add_request_context(app: web.Application) -> None:
    """Give every request of `app` a request id (its own or a new one), in its log lines and
    echoed in the answer."""
    app.middlewares.append(request_context_middleware)
    app.on_response_prepare.append(echo_request_id)
