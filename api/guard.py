"""What the front lets in before anything else looks at a request (docs/security.md).

- It listens on loopback only.
- `Host` must name loopback with the front's own port: a DNS-rebinding page, whose Host is
  its own name, gets 403 even though the browser reached 127.0.0.1.
- State-changing requests (POST, PUT, PATCH, DELETE) coming from another site (a foreign
  `Origin`, or `Sec-Fetch-Site: cross-site`) get 403, and must be `application/json` (else
  415): an HTML form can send only text/plain, urlencoded or multipart without a CORS
  preflight, and the front answers no preflight (no Access-Control-Allow-* at all).
"""

from __future__ import annotations

import functools
import ipaddress

from aiohttp import web

LOOPBACK_NAMES = {"localhost"}
HOST_NAMES = ("127.0.0.1", "localhost", "[::1]")
STATE_CHANGING = frozenset({"POST", "PUT", "PATCH", "DELETE"})
MAX_HOST_LENGTH = 64


class NonLoopbackBind(Exception):
    """The front was asked to listen somewhere other than loopback."""


class Refused(Exception):
    """A request the door turns away: status, stable error code, message."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def check_bind_address(host: str) -> None:
    """Raise NonLoopbackBind unless `host` is a loopback name or address: the front serves
    loopback only."""
    if host in LOOPBACK_NAMES:
        return
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError as exc:
        raise NonLoopbackBind(f"{host!r} is not a loopback address") from exc
    if not address.is_loopback:
        raise NonLoopbackBind(f"{host} is not a loopback address; the front serves loopback only")


def bind_address(host: str) -> str:
    """What to bind: `[::1]` (as a URL writes it) is the address `::1`."""
    return host.strip("[]")


def url_name(host: str) -> str:
    """How a URL names the bound address: `::1` → `[::1]`."""
    address = bind_address(host)
    return f"[{address}]" if ":" in address else address


@functools.cache  # one front has one port and one address: built once, not per request
def allowed_hosts(port: int, bind: str = "127.0.0.1") -> frozenset[str]:
    """Our loopback names with our port, and the address we are bound to (127.0.0.2 too)."""
    names = {f"{name}:{port}" for name in (*HOST_NAMES, url_name(bind).lower())}
    if port == 80:
        names.update(HOST_NAMES)
        names.add(url_name(bind).lower())
    return frozenset(names)


def check_host(value: str | None, port: int, bind: str = "127.0.0.1") -> None:
    """Exact match against the loopback names with our port; anything else is refused."""
    if (value is None or len(value) > MAX_HOST_LENGTH
            or value.lower() not in allowed_hosts(port, bind)):
        shown = "none" if value is None else repr(value[:MAX_HOST_LENGTH])
        raise Refused(403, "host_not_allowed",
                      f"Host {shown} is not this front; use http://127.0.0.1:{port}/")


def check_site(request: web.Request, port: int, bind: str = "127.0.0.1") -> None:
    if request.method not in STATE_CHANGING:
        return
    if request.headers.get("Sec-Fetch-Site", "").lower() == "cross-site":
        raise Refused(403, "cross_site_request", "cross-site requests may not change state")
    origin = request.headers.get("Origin")
    if origin is not None and origin.lower() not in {f"http://{h}"
                                                     for h in allowed_hosts(port, bind)}:
        raise Refused(403, "origin_not_allowed",
                      f"Origin {origin[:MAX_HOST_LENGTH]!r} may not change state here")


def check_content_type(request: web.Request) -> None:
    if request.method not in STATE_CHANGING:
        return
    media = request.headers.get("Content-Type", "").split(";", 1)[0].strip().lower()
    if media != "application/json":
        raise Refused(415, "unsupported_media_type",
                      f"{request.method} requests must be Content-Type: application/json")


def check_content_encoding(request: web.Request) -> None:
    """A compressed request body is refused: aiohttp would decode it while the relay still
    declared its compressed length, which hung or cut the body on the daemon's side. Every
    `Content-Encoding` header is read, and every coding each one lists."""
    for value in request.headers.getall("Content-Encoding", ()):
        for coding in value.split(","):
            encoding = coding.strip().lower()
            if encoding not in ("", "identity"):
                raise Refused(415, "unsupported_content_encoding",
                              f"request bodies are not decoded here; send them without "
                              f"Content-Encoding (got {encoding[:40]!r})")
