"""The front's one middleware: every request, SSE and file downloads included, passes here.

In order: a request id; `Host` (403); the token (401); the site of a state-changing request
(403), its Content-Type and every Content-Encoding (415); the declared body size (413).
A request that passes makes its connection admitted (it keeps its slot: api/slots.py). Then
the route; a stream past the front's stream cap is answered `429 too_many_streams` instead,
and its connection closed (api/slots.py). Errors keep the API's shape `{"detail": {"error",
"message"}}`, and one log line per request says method, path (never the query string: it
may hold `?token=`), status and time; the door's own refusals, which anyone who can reach
the port can cause, and the streams refused past the cap, which a client in a loop (or a
page opening a thousand) causes by the thousand, are one line per reason per minute with a
count (`refusals`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from aiohttp import web

from llamon_playground.api.auth import TokenAuth
from llamon_playground.api.guard import (
    Refused,
    check_content_encoding,
    check_content_type,
    check_host,
    check_site,
)
from llamon_playground.api.handover import wants_handover
from llamon_playground.api.limits import BodyTooLarge, body_limit, check_declared
from llamon_playground.api.page import unauthorized_page, wants_page
from llamon_playground.api.slots import SLOTS, Slots
from llamon_playground.common.config import Settings
from llamon_playground.common.http_json import error_response, http_error_response
from llamon_playground.common.logging_setup import Summary, log_context
from llamon_playground.common.request_context import REQUEST_ID, request_id_of, run_id_in

log = logging.getLogger(__name__)
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
REFUSED = web.RequestKey("refused", str)  # "<status> <code>" of a request the door refused


@dataclass
class Door:
    """What the door needs to know; `port` is filled in once the front has bound."""

    settings: Settings
    auth: TokenAuth | None
    port: int = 0
    bind: str = "127.0.0.1"  # the address the front listens on, as given
    refusals: Summary = field(default_factory=lambda: Summary(log))  # flushed by api/app.py

    def admit(self, request: web.Request) -> web.StreamResponse | None:
        """Raise Refused, or return an answer of the door's own (the login redirect)."""
        check_host(request.headers.get("Host"), self.port, self.bind)
        if self.auth is not None:
            if self.auth.is_login(request):
                answer = self.auth.login(request, self.port)
                if answer is None:
                    raise Refused(401, "unauthorized", "wrong token")
                return answer
            if not self.auth.allows(request, self.port):
                raise Refused(401, "unauthorized", "a token is needed: `Authorization: Bearer "
                              "<token>`, or open the URL `up` printed")
        check_site(request, self.port, self.bind)
        check_content_type(request)
        check_content_encoding(request)
        check_declared(request.content_length,
                       body_limit(self.settings, request.method, request.path))
        return None

    def refused_login(self, request: web.Request) -> str:
        """Why a browser was not let in, in the words the 401 page says: a token that is not
        this front's (in the address, or a cookie from an earlier token), or none given."""
        if self.auth is None:
            return "none"
        if self.auth.is_login(request):
            return "wrong"
        return "stale" if self.auth.cookie_name(self.port) in request.cookies else "none"

    def admitted(self, request: web.Request) -> None:
        """The request passed: its connection holds its slot, under the current token."""
        slots = request.app.get(SLOTS)
        if slots is not None:
            slots.admit(request.protocol, self.auth.generation if self.auth else 0)


DOOR = web.AppKey("door", Door)


def refusal(status: int, code: str, message: str) -> web.Response:
    response = error_response(status, code, message)
    if status == 401:
        response.headers["WWW-Authenticate"] = 'Bearer realm="llamon-playground"'
    return response


@web.middleware
async def door_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    rid = request_id_of(request)
    request[REQUEST_ID] = rid
    started = time.monotonic()
    with log_context(request_id=rid, run_id=run_id_in(request)):
        response = await _answer(request, handler)
        status = response.status
        refused = request.get(REFUSED)
        if refused is not None:
            request.app[DOOR].refusals.note(f"refused: {refused}", "%s %s -> %s",
                                            request.method, request.path, refused)
            return response
        level = (logging.DEBUG if status < 400 else logging.INFO if status < 500
                 else logging.WARNING)
        log.log(level, "%s %s -> %d (%.1f ms)", request.method, request.path, status,
                (time.monotonic() - started) * 1000)
        return response


async def _stream(request: web.Request, handler: Handler, slots: Slots) -> web.StreamResponse:
    """A stream holds its connection for as long as it runs: past the cap, a 429 whose
    connection is closed (it holds no slot), so the API's other routes keep theirs."""
    if not slots.stream_begins(request.protocol):
        request[REFUSED] = "429 too_many_streams"
        response = refusal(429, "too_many_streams",
                           f"this front serves at most {slots.max_streams} streams at once "
                           f"and all are open; close one (another tab or client) and retry")
        response.headers["Retry-After"] = "1"
        response.force_close()
        return response
    try:
        return await handler(request)
    finally:
        slots.stream_ends(request.protocol)


async def _answer(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        door = request.app[DOOR]
        early = door.admit(request)
        door.admitted(request)
        if early is not None:
            return early
        slots = request.app.get(SLOTS)
        if slots is None or not wants_handover(request):
            return await handler(request)
        return await _stream(request, handler, slots)
    except Refused as exc:
        request[REFUSED] = f"{exc.status} {exc.code}"
        if exc.status == 401 and wants_page(request):
            response = unauthorized_page(request.app[DOOR].refused_login(request))
            response.headers["WWW-Authenticate"] = 'Bearer realm="llamon-playground"'
            return response
        return refusal(exc.status, exc.code, exc.message)
    except BodyTooLarge as exc:
        request[REFUSED] = "413 payload_too_large"
        response = refusal(413, "payload_too_large", str(exc))
        response.force_close()  # don't linger reading a body we refuse
        return response
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        return http_error_response(exc)
    except Exception:
        log.exception("the front failed on %s %s", request.method, request.path)
        return refusal(500, "internal_error", "the front failed to answer; see its log")
