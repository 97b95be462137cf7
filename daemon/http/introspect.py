"""Project introspection routes, on the daemon's socket under /api/playground/v1.

GET /composer-schema            the input composer: a Flow's contract tabs, or the AgentCard's
GET /source-targets/{node_id}   file, line and column of a Flow node's function
GET /runs/{run_id}/snippets     Copy curl / Copy Python of the run's A2A request (a resumed
                                run's: its resume chain, to a fresh task)

Which composer, which address and protocol version: `daemon/introspect/service.py`'s rules;
these handlers read the path, call it and answer.
"""

from __future__ import annotations

import aiohttp
from aiohttp import web

from llamon_playground.common.config import Settings
from llamon_playground.common.http_json import json_response
from llamon_playground.daemon.http.util import bind
from llamon_playground.daemon.introspect.service import Introspection
from llamon_playground.daemon.store.blobs import BlobStore
from llamon_playground.daemon.store.history_service import HistoryService
from llamon_playground.host_manager.state import HostState
from llamon_playground.host_manager.supervisor import HostSupervisor


class IntrospectRoutes:
    """The composer, a node's source target and a run's snippets, as introspection says."""

    def __init__(self, introspection: Introspection) -> None:
        self._introspection = introspection

    async def composer_schema(self, request: web.Request) -> web.Response:
        return json_response(await self._introspection.composer())

    async def source_target(self, request: web.Request) -> web.Response:
        return json_response(
            await self._introspection.source_target(request.match_info["node_id"]))

    async def run_snippets(self, request: web.Request) -> web.Response:
        return json_response(await self._introspection.snippets(request.match_info["run_id"]))


def add_introspect_routes(app: web.Application, *, settings: Settings, host: HostSupervisor,
                          http: aiohttp.ClientSession, history: HistoryService,
                          blobs: BlobStore) -> None:
    """Route the composer schema, source targets and a run's snippets."""
    def ready_url() -> str | None:
        gen = host.generation
        return gen.url if host.state == HostState.READY and gen is not None else None

    routes = IntrospectRoutes(Introspection(
        settings.project_dir, http, host_url=ready_url, host_state=lambda: host.state.value,
        run_of=history.run, read_blob=blobs.read))
    bind(app, "introspect", routes)
