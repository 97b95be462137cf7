"""The capture endpoint: trace events and evaluator results from the Host.

Served only on the daemon's Unix socket (the front relays /api/playground/v1/* and
/health, nothing else). The handler reads the token and the body and answers; what is
accepted, and for which run, is `daemon.runs.capture`'s.
"""

from __future__ import annotations

from aiohttp import web

from llamon_playground.common.http_json import json_response
from llamon_playground.common.limits import Limits
from llamon_playground.daemon.http.util import bind, read_json
from llamon_playground.daemon.runs.capture import CaptureService
from llamon_playground.daemon.runs.manager import RunManager
from llamon_playground.daemon.store.database import Store
from llamon_playground.host_manager.supervisor import HostSupervisor

MAX_CAPTURE_BYTES = 1024 * 1024


class CaptureRoute:
    """POST /capture/v1/events: the token checked before the body is read."""

    def __init__(self, capture: CaptureService) -> None:
        self._capture = capture

    async def capture(self, request: web.Request) -> web.Response:
        header = request.headers.get("Authorization", "")
        self._capture.admit(header[7:] if header.startswith("Bearer ") else None)
        body = await read_json(request, MAX_CAPTURE_BYTES)
        return json_response({"accepted": await self._capture.accept(body)})


def add_capture_routes(app: web.Application, *, store: Store, host: HostSupervisor,
                       runs: RunManager, limits: Limits) -> None:
    """Route the Host's capture endpoint."""
    bind(app, "capture", CaptureRoute(CaptureService(store, host, runs, limits)))
