"""Suites and suite runs (docs/suites.md).

    POST   /suites                     {"name", "cases", "run_on_save"?} → suite
    GET    /suites                     → {"suites"}
    GET    /suites/{suite_id}          → suite with its cases
    PATCH  /suites/{suite_id}          {"name"?, "run_on_save"?, "baseline_suite_run_id"?}
    DELETE /suites/{suite_id}
    POST   /suites/{suite_id}/runs     {"repeat"?} → 202 {"suite_run_id", "status"}
    POST   /suites/{suite_id}/file     {"path"?} → {"path", "bytes", "files"}: save as a file
    GET    /suites/{suite_id}/runs     → {"suite_runs"}
    GET    /suite-runs/{id}            → the report
    DELETE /suite-runs/{id}            cancel
    GET    /suite-runs/{id}/events     progress as SSE, replay by cursor
    GET    /suite-runs/{id}/cases/{case_id}   one case compared in full
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from llamon_playground.common.config import Settings
from llamon_playground.common.http_json import json_response
from llamon_playground.daemon.http.sse import parse_cursor, prepare_stream, stream_run
from llamon_playground.daemon.http.util import bind, read_json
from llamon_playground.daemon.store.database import Store
from llamon_playground.daemon.store.event_log import EventHub
from llamon_playground.daemon.suites.service import SuiteService


class SuiteRoutes:
    """Each handler parses, calls the suite service, renders."""

    def __init__(self, settings: Settings, store: Store, hub: EventHub,
                 suites: SuiteService) -> None:
        self._settings = settings
        self._store = store
        self._hub = hub
        self._suites = suites

    async def _body(self, request: web.Request) -> Any:
        return await read_json(request, self._settings.max_request_bytes)

    async def create(self, request: web.Request) -> web.Response:
        return json_response(await self._suites.create(await self._body(request)), 201)

    async def list_suites(self, request: web.Request) -> web.Response:
        return json_response(await self._suites.list_suites())

    async def get(self, request: web.Request) -> web.Response:
        return json_response(await self._suites.suite(request.match_info["suite_id"]))

    async def patch(self, request: web.Request) -> web.Response:
        body = await self._body(request)
        return json_response(await self._suites.patch(request.match_info["suite_id"], body))

    async def delete(self, request: web.Request) -> web.Response:
        return json_response(await self._suites.delete(request.match_info["suite_id"]))

    async def start(self, request: web.Request) -> web.Response:
        body = await self._body(request)
        return json_response(await self._suites.start(request.match_info["suite_id"],
                                                      body=body), 202)

    async def save(self, request: web.Request) -> web.Response:
        body = await self._body(request)
        return json_response(await self._suites.save(request.match_info["suite_id"], body))

    async def runs(self, request: web.Request) -> web.Response:
        return json_response(await self._suites.runs_of(request.match_info["suite_id"]))

    async def report(self, request: web.Request) -> web.Response:
        return json_response(await self._suites.report(request.match_info["suite_run_id"]))

    async def cancel(self, request: web.Request) -> web.Response:
        return json_response(await self._suites.cancel(request.match_info["suite_run_id"]))

    async def case(self, request: web.Request) -> web.Response:
        return json_response(await self._suites.case(request.match_info["suite_run_id"],
                                                     request.match_info["case_id"]))

    async def events(self, request: web.Request) -> web.StreamResponse:
        suite_run_id = request.match_info["suite_run_id"]
        cursor = parse_cursor(request)
        terminal = await self._suites.is_terminal(suite_run_id)
        if terminal and not await self._store.events_after(suite_run_id, cursor, 1):
            return web.Response(status=204)
        response = await prepare_stream(request)
        try:
            await stream_run(response, self._store, self._hub, suite_run_id, cursor,
                             run_is_terminal=terminal,
                             keepalive=self._settings.keepalive_interval)
        except (ConnectionResetError, ConnectionError):
            pass  # the client left; the suite run goes on
        return response


def add_suite_routes(app: web.Application, *, settings: Settings, store: Store, hub: EventHub,
                     suites: SuiteService) -> None:
    """Route suites and suite runs."""
    routes = SuiteRoutes(settings, store, hub, suites)
    bind(app, "suites", routes)
