"""Introspection as the routes ask it: which input composer the page shows, where a node's
function lives, and what a run's Copy curl / Copy Python address and in which protocol
version.

The composer: a Flow's contract tabs from its graph module (whatever the Host's state); an
agent's from the live Host's AgentCard while it is Ready; otherwise the source alone, saying
why. A snippet: the run's own protocol version (a 0.3 Host knows no 1.0 method), or, for a
run that never reached a Host, the version the Host's card offers now; addressed to the
interface the card gives for that version, else the Host's base URL; none while the Host is
not Ready. A resumed run's snippet replays its resume chain from the root.

This room sees neither the Host nor history: whoever builds the service passes the Ready
generation's URL, the Host's state, and history's run and blob readers (`daemon.http`'s
route group, from the services `daemon.app` wired). Project source is parsed off the event
loop (asyncio.to_thread): a large module must not stall the streams this process serves.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp

from llamon_playground.daemon.a2a.client import A2AClient, A2AUnavailable
from llamon_playground.daemon.a2a.wire import V1, Interface
from llamon_playground.daemon.errors import ApiError, NotFound, ProjectError
from llamon_playground.daemon.introspect.agent_card import agent_composer, source_only_composer
from llamon_playground.daemon.introspect.composer import answer, flow_composer
from llamon_playground.daemon.introspect.errors import NodeNotFound, SourceNotFound
from llamon_playground.daemon.introspect.model import Diagnostic
from llamon_playground.daemon.introspect.project_config import ProjectConfig, load_project_config
from llamon_playground.daemon.introspect.project_source import ProjectSource, graph_file
from llamon_playground.daemon.introspect.snippets import build_snippets
from llamon_playground.daemon.introspect.source_targets import find_source_target

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


def snippet_address(run: dict[str, Any], base_url: str | None,
                    interface: Interface | None) -> tuple[str | None, str]:
    """Where a run's snippet sends its request, and in which protocol version."""
    version = run.get("a2a_version") or (interface.version if interface else V1)
    if base_url is None:
        return None, version
    if interface is not None and interface.version == version:
        return interface.url, version
    return base_url + "/", version


class Introspection:
    """The project's source and the live Host, read for the page's composer and snippets."""

    def __init__(self, project_dir: Path, http: aiohttp.ClientSession, *,
                 host_url: Callable[[], str | None], host_state: Callable[[], str],
                 run_of: Callable[[str], Awaitable[dict[str, Any]]],
                 read_blob: Callable[[str], bytes]) -> None:
        self._project_dir = project_dir
        self._source = ProjectSource(project_dir)
        self._http = http
        self._host_url = host_url  # the Ready generation's base URL; None otherwise
        self._host_state = host_state
        self._run_of = run_of  # NotFound for a run history does not have
        self._read_blob = read_blob

    async def _config(self) -> ProjectConfig:
        return await asyncio.to_thread(load_project_config, self._project_dir)

    async def composer(self) -> dict[str, Any]:
        """GET /composer-schema's body."""
        base_url = self._host_url()
        try:
            config = await self._config()
        except ProjectError as exc:
            note = Diagnostic("project_invalid", str(exc), "pyproject.toml")
            return answer(None, base_url is not None, [], [note], source="none")
        if config.kind == "flow":
            return await asyncio.to_thread(_flow_answer, self._source, config,
                                           base_url is not None)
        if base_url is None:
            return source_only_composer(
                config.kind, f"the Host is not running (state: {self._host_state()})")
        try:
            card = await A2AClient(self._http, base_url).fetch_card(timeout=CARD_TIMEOUT)
        except A2AUnavailable as exc:
            return source_only_composer(config.kind, f"the Host's {exc}")
        return agent_composer(config.kind, card)

    async def source_target(self, node_id: str) -> dict[str, Any]:
        """File, line and column of a Flow node's function (404 for no such node or no
        source found, 422 for a project or graph module that cannot be read)."""
        try:
            config = await self._config()
        except ProjectError as exc:
            raise ApiError(str(exc), code="project_invalid", status=422) from exc
        if config.kind != "flow":
            raise NotFound(f"the project is an {config.kind}: it has no Flow graph, so no node "
                           f"{node_id!r}", code="node_not_found")
        graph = await asyncio.to_thread(self._source.graph, config)
        if not graph.parsed:
            first = graph.diagnostics[0]
            raise ApiError(f"the graph module cannot be read: {first.message}",
                           code="graph_invalid", status=422,
                           diagnostics=[d.as_dict() for d in graph.diagnostics])
        try:
            target = await asyncio.to_thread(find_source_target, self._source, graph, node_id)
        except NodeNotFound as exc:
            raise NotFound(str(exc), code="node_not_found") from exc
        except SourceNotFound as exc:
            raise NotFound(str(exc), code="source_not_found") from exc
        return target.as_dict()

    async def snippets(self, run_id: str) -> dict[str, Any]:
        """Copy curl / Copy Python of a run's A2A request, and whether the Host is Ready."""
        chain = await self._resume_chain(await self._run_of(run_id))
        base_url, interface = await self._host_interface()
        url, version = snippet_address(chain[-1], base_url, interface)
        snippets = await asyncio.to_thread(build_snippets, chain, self._read_blob, url, version)
        return {**snippets, "host_ready": url is not None}

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
                parent = await self._run_of(parent_id)
            except NotFound:
                break
            seen.add(parent_id)
            chain.insert(0, parent)
        return chain
