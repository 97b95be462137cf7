"""Token auth of the front, as Jupyter Server does it.

A request is let in with `Authorization: Bearer <token>`, or with the cookie that opening
`/?token=<token>` (the URL `up` prints) sets. `?token=` is honoured on `/` only, so the
token never rides along in API URLs (or in the Referer they cause). Every comparison is
constant-time. The cookie holds an HMAC of the token, not the token: a new token makes old
cookies worthless. Cookies ignore ports: a browser sends the cookie to every other
127.0.0.1 port it visits (another local app reads it there). So the cookie is only an HMAC
of the token, HttpOnly and SameSite=Strict, and its name carries the front's port and the
project (`llamon-playground-<port>-<project key>`): two fronts never overwrite each other's.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable
from dataclasses import dataclass, field

from aiohttp import web

from llamon_playground.common.logging_setup import register_secret

COOKIE_PREFIX = "llamon-playground-"


def same(given: str, expected: str) -> bool:
    return hmac.compare_digest(given.encode("utf-8", "surrogateescape"), expected.encode())


@dataclass
class TokenAuth:
    """The front's token and the cookie derived from it; a rotated token (from `source`)
    replaces both, so old cookies stop working."""

    token: str
    project: str = ""  # the project's key (config.project_key), part of the cookie's name
    # Where a replaced token comes from (`token --rotate`); None: the token never changes.
    source: Callable[[], str] | None = field(default=None, repr=False)
    cookie_value: str = field(init=False, repr=False)
    # Counts the tokens adopted: a connection admitted under an older one is ended
    # (api/slots.py).
    generation: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        self._adopt(self.token)

    def _adopt(self, token: str) -> None:
        self.token = token
        self.generation += 1
        self.cookie_value = hmac.new(self.token.encode(), b"llamon-playground cookie v1",
                                     hashlib.sha256).hexdigest()
        register_secret(self.token)
        register_secret(self.cookie_value)

    def refresh(self) -> bool:
        """Adopt the kept token if it was replaced; True if it was."""
        if self.source is not None:
            token = self.source()
            if token != self.token:
                self._adopt(token)
                return True
        return False

    def __repr__(self) -> str:
        return "TokenAuth(<token>)"

    def cookie_name(self, port: int) -> str:
        return f"{COOKIE_PREFIX}{port}-{self.project}" if self.project else f"{COOKIE_PREFIX}{port}"

    def allows(self, request: web.Request, port: int) -> bool:
        self.refresh()
        header = request.headers.get("Authorization")
        if header is not None:  # a credential that is given is judged, never skipped
            scheme, _, value = header.partition(" ")
            return scheme.lower() == "bearer" and same(value.strip(), self.token)
        cookie = request.cookies.get(self.cookie_name(port))
        return cookie is not None and same(cookie, self.cookie_value)

    def login(self, request: web.Request, port: int) -> web.StreamResponse | None:
        """`GET /?token=...`: a redirect that sets the cookie, or None (then 401)."""
        self.refresh()
        given = request.query.get("token")
        if given is None or not same(given, self.token):
            return None
        # 303 to a clean "/": the token leaves the address bar.
        response = web.Response(status=303, headers={"Location": "/"})
        response.set_cookie(self.cookie_name(port), self.cookie_value, path="/",
                            httponly=True, samesite="Strict")
        response.headers["Cache-Control"] = "no-store"
        response.headers["Referrer-Policy"] = "no-referrer"
        return response

    @staticmethod
    def is_login(request: web.Request) -> bool:
        return request.method == "GET" and request.path == "/" and "token" in request.query
