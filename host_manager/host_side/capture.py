"""The Host side of the Playground: a stdlib-only helper a Host (or a real runtime) uses.

The capture channel:

    capture = PlaygroundCapture.from_env()          # None outside the Playground
    metadata, run_id = open_envelope(capture, context.metadata)   # envelope stripped
    capture.emit(run_id, [{"type": "node.start", "node": "echo"}])

`open_envelope` always strips the reserved key, so agent code never sees it, and returns a
run id only when the envelope's proof matches this generation's token.

The door: `LoopbackGuard(asgi_app, port)` serves only requests the daemon (or a local tool
speaking like it) would send, never a web page's (docs/security.md, the Host).
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import http.client
import json
import os
import socket
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from typing import Any

ENV_TOKEN = "LLAMON_CAPTURE_TOKEN"
ENV_SOCKET = "LLAMON_CAPTURE_SOCKET"
ENVELOPE_KEY = "llamon.playground"
CAPTURE_PATH = "/capture/v1/events"


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float) -> None:
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        sock.connect(self._path)
        self.sock = sock


class PlaygroundCapture:
    """The Host's side of the capture channel: checks a run's envelope against this
    generation's token and sends trace events to the daemon's socket."""

    def __init__(self, token: str, socket_path: str, timeout: float = 5.0) -> None:
        self._token = token
        self._socket_path = socket_path
        self._timeout = timeout

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> PlaygroundCapture | None:
        env = os.environ if environ is None else environ
        token, path = env.get(ENV_TOKEN), env.get(ENV_SOCKET)
        return cls(token, path) if token and path else None

    def verify(self, envelope: Any) -> str | None:
        """The run id of a genuine Playground request, else None."""
        if not isinstance(envelope, dict):
            return None
        run_id, given = envelope.get("run_id"), envelope.get("proof")
        if not isinstance(run_id, str) or not isinstance(given, str):
            return None
        expected = hmac.new(self._token.encode(), run_id.encode(), hashlib.sha256).hexdigest()
        return run_id if hmac.compare_digest(expected, given) else None

    def emit(self, run_id: str, events: list[dict[str, Any]]) -> bool:
        """Send trace events / evaluation results for `run_id`; False if the daemon refused."""
        body = json.dumps({"run_id": run_id, "events": events}).encode()
        conn = _UnixConnection(self._socket_path, self._timeout)
        try:
            conn.request("POST", CAPTURE_PATH, body=body, headers={
                "Content-Type": "application/json", "Authorization": f"Bearer {self._token}"})
            response = conn.getresponse()
            response.read()
            return response.status == 200
        except OSError:
            return False
        finally:
            conn.close()

    async def aemit(self, run_id: str, events: list[dict[str, Any]]) -> bool:
        """`emit` from async code, on the event loop itself. A worker thread would wait for
        the GIL while the loop streams (up to the 5 ms switch interval, each report), and a
        Host's first report would start the thread pool too."""
        try:
            return await asyncio.wait_for(self._post(run_id, events), self._timeout)
        except (OSError, TimeoutError, ValueError):
            return False

    async def _post(self, run_id: str, events: list[dict[str, Any]]) -> bool:
        body = json.dumps({"run_id": run_id, "events": events}).encode()
        head = (f"POST {CAPTURE_PATH} HTTP/1.1\r\nHost: localhost\r\n"
                f"Content-Type: application/json\r\nAuthorization: Bearer {self._token}\r\n"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()
        reader, writer = await asyncio.open_unix_connection(self._socket_path)
        try:
            writer.write(head + body)
            status_line = await reader.readline()  # "HTTP/1.1 200 OK"
            # The answer's body says nothing the status does not: the connection closes.
            parts = status_line.split(None, 2)
            return len(parts) >= 2 and parts[1] == b"200"
        finally:
            writer.close()
            await writer.wait_closed()


def open_envelope(capture: PlaygroundCapture | None,
                  metadata: Mapping[str, Any]) -> tuple[dict[str, Any], str | None]:
    """(metadata without the reserved key, verified run id or None)."""
    clean = {k: v for k, v in metadata.items() if k != ENVELOPE_KEY}
    if capture is None:
        return clean, None
    return clean, capture.verify(metadata.get(ENVELOPE_KEY))


# -- the door ----------------------------------------------------------------------------------
# A Host on 127.0.0.1 is reachable by every web page the developer opens: a blind cross-site
# POST needs no CORS answer, and DNS rebinding lets a page read answers under its own name.
# So a request is served only when its Host header is the loopback address and this port (a
# rebound name never is), it carries no foreign Origin and no `Sec-Fetch-Site: cross-site`,
# and a request with a body says `Content-Type: application/json` (a form or `text/plain` is
# what a page can send without a preflight).
Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
BODYLESS = frozenset({"GET", "HEAD", "OPTIONS"})


def allowed_hosts(port: int) -> frozenset[str]:
    return frozenset(f"{name}:{port}" for name in LOOPBACK_NAMES)


def refusal(headers: dict[str, str], method: str, port: int) -> tuple[int, str, str] | None:
    """(status, code, message) when the request must not reach the app, else None.
    `headers` are lower-cased names with their (first) value."""
    hosts = allowed_hosts(port)
    if headers.get("host", "").lower() not in hosts:
        return 403, "host_refused", "the Host header must name the loopback address and port"
    origin = headers.get("origin")
    if origin is not None and origin.lower() not in {f"http://{h}" for h in hosts}:
        return 403, "origin_refused", "cross-site requests are refused"
    if headers.get("sec-fetch-site", "").lower() == "cross-site":
        return 403, "origin_refused", "cross-site requests are refused"
    if method not in BODYLESS:
        ctype = headers.get("content-type", "").split(";", 1)[0].strip().lower()
        if ctype != "application/json":
            return 415, "unsupported_media_type", "send JSON with Content-Type: application/json"
    return None


class LoopbackGuard:
    """ASGI middleware that lets through only requests the daemon would send (a loopback Host
    header, no web page's Origin), so a browser tab cannot drive the Host directly."""

    def __init__(self, app: ASGIApp, port: int) -> None:
        self._app = app
        self._port = port

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self._app(scope, receive, send)  # lifespan
            return
        headers: dict[str, str] = {}
        for name, value in scope.get("headers", []):
            headers.setdefault(name.decode("latin-1").lower(), value.decode("latin-1"))
        refused = refusal(headers, scope.get("method", "GET"), self._port)
        if refused is None:
            await self._app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        status, code, message = refused
        body = json.dumps({"error": code, "message": message}).encode()
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json"),
                                (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})
