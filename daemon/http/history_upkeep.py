"""What history holds, and the retention policy run on demand (docs/storage.md, Retention).

    GET    /api/playground/v1/history        size, counts, policy, what the policy would remove
    POST   /api/playground/v1/history/trim   apply the policy now: what was removed
"""

from __future__ import annotations

from aiohttp import web

from llamon_playground.common.contract import API_PREFIX
from llamon_playground.common.http_json import json_response
from llamon_playground.daemon.services import SERVICES


async def history_report(request: web.Request) -> web.Response:
    return json_response(await request.app[SERVICES].trimmer.report())


async def history_trim(request: web.Request) -> web.Response:
    return json_response(await request.app[SERVICES].trimmer.trim())


def add_history_routes(app: web.Application) -> None:
    app.router.add_get(API_PREFIX + "/history", history_report)
    app.router.add_post(API_PREFIX + "/history/trim", history_trim)
