"""What history holds, and the retention policy run on demand (docs/storage.md, Retention).

    GET    /api/playground/v1/history        size, counts, policy, what the policy would remove
    POST   /api/playground/v1/history/trim   apply the policy now: what was removed
"""

from __future__ import annotations

from aiohttp import web

from llamon_playground.common.http_json import json_response
from llamon_playground.daemon.http.util import bind
from llamon_playground.daemon.store.upkeep.trimmer import Trimmer


class HistoryUpkeepRoutes:
    """History's size and the retention policy; the trimmer does the work."""

    def __init__(self, trimmer: Trimmer) -> None:
        self._trimmer = trimmer

    async def report(self, request: web.Request) -> web.Response:
        return json_response(await self._trimmer.report())

    async def trim(self, request: web.Request) -> web.Response:
        return json_response(await self._trimmer.trim())


def add_history_routes(app: web.Application, *, trimmer: Trimmer) -> None:
    """Route the history report and its trim."""
    routes = HistoryUpkeepRoutes(trimmer)
    bind(app, "upkeep", routes)
