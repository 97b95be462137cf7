"""The capture channel, Host side: a stdlib-only helper a Host (or a real runtime) uses.

    capture = PlaygroundCapture.from_env()          # None outside the Playground
    metadata, run_id = open_envelope(capture, context.metadata)   # envelope stripped
    capture.emit(run_id, [{"type": "node.start", "node": "echo"}])

`open_envelope` always strips the reserved key, so agent code never sees it, and returns a
run id only when the envelope's proof matches this generation's token.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import http.client
import json
import os
import socket
from collections.abc import Mapping
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
        return await asyncio.to_thread(self.emit, run_id, events)


def open_envelope(capture: PlaygroundCapture | None,
                  metadata: Mapping[str, Any]) -> tuple[dict[str, Any], str | None]:
    """(metadata without the reserved key, verified run id or None)."""
    clean = {k: v for k, v in metadata.items() if k != ENVELOPE_KEY}
    if capture is None:
        return clean, None
    return clean, capture.verify(metadata.get(ENVELOPE_KEY))
