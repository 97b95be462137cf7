"""Names and lineage: edit a session or a run after the fact, and a run's lineage.

    PATCH /api/playground/v1/sessions/{session_id}   {"title"?, "metadata"?} → session
    PATCH /api/playground/v1/runs/{run_id}           {"label"?, "note"?} → run
    GET   /api/playground/v1/runs/{run_id}/lineage   resume chain and rerun tree
"""

from __future__ import annotations

from aiohttp import web

from llamon_playground.common.http_json import json_response
from llamon_playground.common.limits import Limits
from llamon_playground.daemon.data.edits import parse_run_fields, parse_session_fields
from llamon_playground.daemon.http.util import bind, read_json
from llamon_playground.daemon.store.history_service import HistoryService


class EditRoutes:
    """Edits after the fact and lineage; validated in full before the service writes."""

    def __init__(self, history: HistoryService, max_request_bytes: int,
                 limits: Limits) -> None:
        self._history = history
        self._max_bytes = max_request_bytes
        self._limits = limits

    async def patch_session(self, request: web.Request) -> web.Response:
        fields = parse_session_fields(await read_json(request, self._max_bytes), self._limits)
        return json_response(
            await self._history.update_session(request.match_info["session_id"], fields))

    async def patch_run(self, request: web.Request) -> web.Response:
        fields = parse_run_fields(await read_json(request, self._max_bytes))
        return json_response(
            await self._history.update_run(request.match_info["run_id"], fields))

    async def get_lineage(self, request: web.Request) -> web.Response:
        return json_response(await self._history.lineage(request.match_info["run_id"]))


def add_edit_routes(app: web.Application, *, history: HistoryService,
                    max_request_bytes: int, limits: Limits) -> None:
    """Route the edits of sessions and runs and a run's lineage."""
    routes = EditRoutes(history, max_request_bytes, limits)
    bind(app, "edits", routes)
