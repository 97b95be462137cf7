"""Project introspection routes, on the daemon's socket under /api/playground/v1.

GET /composer-schema            the input composer: a Flow's contract tabs, or the AgentCard's
GET /source-targets/{node_id}   file, line and column of a Flow node's function
GET /runs/{run_id}/snippets     Copy curl / Copy Python of the run's A2A request (a resumed
                                run's: its resume chain, to a fresh task)

Project source is parsed off the event loop (asyncio.to_thread): a large module must not
stall the SSE streams this process also serves.
"""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
from aiohttp import web

from llamon_playground.common.config import Settings
from llamon_playground.common.http_json import json_response
from llamon_playground.daemon.a2a.client import A2AClient, A2AUnavailable
from llamon_playground.daemon.a2a.wire import V1, Interface
from llamon_playground.daemon.errors import ApiError, NotFound, ProjectError
from llamon_playground.daemon.http.util import bind
from llamon_playground.daemon.introspect.agent_card import agent_composer, source_only_composer
from llamon_playground.daemon.introspect.composer import answer, flow_composer
from llamon_playground.daemon.introspect.errors import NodeNotFound, SourceNotFound
from llamon_playground.daemon.introspect.model import Diagnostic
from llamon_playground.daemon.introspect.project_config import ProjectConfig, load_project_config
from llamon_playground.daemon.introspect.project_source import ProjectSource, graph_file
from llamon_playground.daemon.introspect.snippets import build_snippets
from llamon_playground.daemon.introspect.source_targets import find_source_target
from llamon_playground.daemon.store.blobs import BlobStore
from llamon_playground.daemon.store.history_service import HistoryService
from llamon_playground.host_manager.state import HostState
from llamon_playground.host_manager.supervisor import HostSupervisor

CARD_TIMEOUT = 3.0


def _flow_answer(source: ProjectSource, config: ProjectConfig, host_ready: bool
                 ) -> dict[str, Any]:
    graph = source.graph(config)
    path = source.inside(graph_file(config))
    stamp: dict[str, Any] = {}
    if path is not None and path.is_file():
        st = path.stat()
        stamp = {"mtime_ns": st.st_mtime_ns, "size": st.st_size}
    return flow_composer(graph, host_ready, stamp)


class IntrospectRoutes:
    """The project's source and the live Host, read for the page's composer and snippets."""

    def __init__(self, settings: Settings, host: HostSupervisor, http: aiohttp.ClientSession,
                 history: HistoryService, blobs: BlobStore) -> None:
        self._project_dir = settings.project_dir
        self._source = ProjectSource(settings.project_dir)
        self._host = host
        self._http = http
        self._history = history
        self._blobs = blobs

    def _host_url(self) -> str | None:
        """The current generation's base URL while it is Ready; None otherwise."""
        gen = self._host.generation
        return gen.url if self._host.state == HostState.READY and gen is not None else None

    async def _config(self) -> ProjectConfig:
        return await asyncio.to_thread(load_project_config, self._project_dir)

    # -- composer -----------------------------------------------------------------------------

    async def composer_schema(self, request: web.Request) -> web.Response:
        base_url = self._host_url()
        try:
            config = await self._config()
        except ProjectError as exc:
            note = Diagnostic("project_invalid", str(exc), "pyproject.toml")
            return json_response(answer(None, base_url is not None, [], [note], source="none"))
        if config.kind == "flow":
            return json_response(await asyncio.to_thread(
                _flow_answer, self._source, config, base_url is not None))
        if base_url is None:
            return json_response(source_only_composer(
                config.kind, f"the Host is not running (state: {self._host.state.value})"))
        try:
            card = await A2AClient(self._http, base_url).fetch_card(timeout=CARD_TIMEOUT)
        except A2AUnavailable as exc:
            return json_response(source_only_composer(config.kind, f"the Host's {exc}"))
        return json_response(agent_composer(config.kind, card))

    # -- source targets -----------------------------------------------------------------------

    async def source_target(self, request: web.Request) -> web.Response:
        node_id = request.match_info["node_id"]
        try:
            config = await self._config()
        except ProjectError as exc:
            raise ApiError(str(exc), code="project_invalid", status=422) from exc
        if config.kind != "flow":
            raise NotFound(f"the project is an {config.kind}: it has no Flow graph, so no node "
                           f"{node_id!r}", code="node_not_found")
        source = self._source
        graph = await asyncio.to_thread(source.graph, config)
        if not graph.parsed:
            first = graph.diagnostics[0]
            raise ApiError(f"the graph module cannot be read: {first.message}",
                           code="graph_invalid", status=422,
                           diagnostics=[d.as_dict() for d in graph.diagnostics])
        try:
            target = await asyncio.to_thread(find_source_target, source, graph, node_id)
        except NodeNotFound as exc:
            raise NotFound(str(exc), code="node_not_found") from exc
        except SourceNotFound as exc:
            raise NotFound(str(exc), code="source_not_found") from exc
        return json_response(target.as_dict())

    # -- snippets -----------------------------------------------------------------------------

    async def _host_interface(self) -> tuple[str | None, Interface | None]:
        """The ready Host's base URL and the interface its card prefers (None: unknown)."""
        base_url = self._host_url()
        if base_url is None:
            return None, None
        try:
            return base_url, await A2AClient(self._http, base_url).interface()
        except A2AUnavailable:
            return base_url, None

    async def _resume_chain(self, run: dict[str, Any]) -> list[dict[str, Any]]:
        """The runs whose messages a resumed run's snippet sends, its root first: the task
        the run answered has ended, so a snippet starts a fresh one from the root. A parent
        history no longer has ends the walk (the first run then has a `parent_run_id`)."""
        chain = [run]
        seen = {run["id"]}
        while (parent_id := chain[0].get("parent_run_id")) and parent_id not in seen:
            try:
                parent = await self._history.run(parent_id)
            except NotFound:
                break
            seen.add(parent_id)
            chain.insert(0, parent)
        return chain

    async def run_snippets(self, request: web.Request) -> web.Response:
        chain = await self._resume_chain(await self._history.run(request.match_info["run_id"]))
        run = chain[-1]
        base_url, interface = await self._host_interface()
        # The run's own protocol version (a 0.3 Host knows no 1.0 method); for a run that
        # never reached a Host, the version the Host's card offers now.
        version = run.get("a2a_version") or (interface.version if interface else V1)
        url = None if base_url is None else (
            interface.url if interface is not None and interface.version == version
            else base_url + "/")
        snippets = await asyncio.to_thread(build_snippets, chain, self._blobs.read, url, version)
        return json_response({**snippets, "host_ready": url is not None})


def add_introspect_routes(app: web.Application, *, settings: Settings, host: HostSupervisor,
                          http: aiohttp.ClientSession, history: HistoryService,
                          blobs: BlobStore) -> None:
    """Route the composer schema, source targets and a run's snippets."""
    routes = IntrospectRoutes(settings, host, http, history, blobs)
    bind(app, "introspect", routes)
