"""echo_agent Host: serves the agent card and the A2A JSON-RPC endpoint.

Started by the llamon daemon as ``{python} -m app.host`` with cwd = the project
folder. Environment contract (read once, at start):

- ``LLAMON_HOST_PORT`` (required): TCP port; we bind 127.0.0.1 only, behind the
  Playground's LoopbackGuard (loopback Host header, no cross-site Origin, JSON bodies).
- ``LLAMON_A2A_VERSIONS`` (optional, default "1.0,0.3"): protocol versions the
  card advertises. The endpoint itself always accepts both method families.
- ``ECHO_CHUNK_DELAY_MS`` (optional, default 0): pause between streamed chunks.
- ``ECHO_SLOW_TICKS`` (optional, default 60): how many half-second ticks ``slow`` streams
  before it completes.
- ``ECHO_INPUT_SCHEMAS`` (optional, default none): comma-separated schema names the
  card declares in its ``input_schemas`` capability (``urn:llamon:input-schemas``).
"""

from __future__ import annotations

import asyncio
import os
import socket
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from types import FrameType

import uvicorn
from a2a.server.agent_execution import AgentExecutor
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.types import AgentCapabilities, AgentCard, AgentExtension, AgentInterface, AgentSkill
from starlette.applications import Starlette

from app.agent import SLOW_TICKS, EchoAgentExecutor
from llamon_playground.host_manager.host_side.capture import LoopbackGuard
from llamon_playground.host_manager.host_side.otel import traced_app, traced_executor
from llamon_playground.host_manager.host_side.task_store import StreamingTaskStore

KNOWN_VERSIONS = ("1.0", "0.3")
RPC_PATH = "/"
# The llamon `input_schemas` capability: an A2A 1.0 card has no free-form fields, so it
# is an extension whose params list the schema names (docs/project-format.md).
INPUT_SCHEMAS_URI = "urn:llamon:input-schemas"


def parse_versions(raw: str) -> list[str]:
    """"1.0,0.3" -> ["1.0", "0.3"]; unknown or empty lists are a config error."""
    versions = [v.strip() for v in raw.split(",") if v.strip()]
    unknown = [v for v in versions if v not in KNOWN_VERSIONS]
    if not versions or unknown:
        raise SystemExit(f"LLAMON_A2A_VERSIONS must list {KNOWN_VERSIONS}, got {raw!r}")
    return versions


def parse_schemas(raw: str) -> list[str]:
    """"approval.v1, other.v2" -> ["approval.v1", "other.v2"]; "" -> []."""
    return [s.strip() for s in raw.split(",") if s.strip()]


def capabilities(input_schemas: list[str]) -> AgentCapabilities:
    extensions = []
    if input_schemas:
        extension = AgentExtension(
            uri=INPUT_SCHEMAS_URI,
            description="Schema ids this agent accepts as data.schema of a data part",
        )
        extension.params.update({"schemas": input_schemas})
        extensions.append(extension)
    return AgentCapabilities(streaming=True, extensions=extensions)


def build_card(port: int, versions: list[str],
               input_schemas: list[str] | None = None) -> AgentCard:
    """The public agent card; one JSON-RPC interface per advertised version."""
    url = f"http://127.0.0.1:{port}{RPC_PATH}"
    return AgentCard(
        name="echo_agent",
        description=(
            "Example agent that echoes text as a stream and, on request, returns "
            "data/file parts, asks a question, runs slowly, fails or crashes."
        ),
        version="0.1.0",
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version=v)
            for v in versions
        ],
        capabilities=capabilities(input_schemas or []),
        default_input_modes=["text/plain", "application/json"],
        default_output_modes=["text/plain", "application/json", "application/octet-stream"],
        skills=[
            AgentSkill(
                id="echo",
                name="Echo",
                description=(
                    "The first word picks the behaviour: stream, tokens N, data, ask, "
                    "slow, fail, crash; any other text is echoed back word by word."
                ),
                tags=["echo", "test"],
                examples=["stream hello world", "markdown", "data", "ask", "slow", "fail", "crash"],
            )
        ],
    )


def new_task_store() -> StreamingTaskStore:
    """The SDK's default store deep-copies the whole task, every artifact chunk so far
    included, on each save (once per streamed event), and the SDK copies it once more for
    subscribers: a run's cost would grow with its length. This one keeps the task the SDK
    already holds, with each artifact's streamed text in a few large parts."""
    return StreamingTaskStore()


def build_app(card: AgentCard, executor: AgentExecutor) -> Starlette:
    handler = DefaultRequestHandler(
        agent_executor=executor,
        task_store=new_task_store(),
        agent_card=card,
    )

    @asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        yield
        # Drain running tasks (e.g. a `slow` one) so shutdown leaves nothing pending.
        await handler.aclose()

    routes = [
        *create_agent_card_routes(card),
        # 0.3 compat is always on: the card may advertise only one version, but
        # clients of either generation must be able to talk to us.
        *create_jsonrpc_routes(handler, rpc_url=RPC_PATH, enable_v0_3_compat=True),
    ]
    return Starlette(routes=routes, lifespan=lifespan)


class ReadyServer(uvicorn.Server):
    """uvicorn.Server that announces readiness once the socket is listening, and closes its
    listener as soon as it is asked to stop."""

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        self.loop = asyncio.get_running_loop()
        await super().startup(sockets=sockets)
        if self.started:
            print(f"echo_agent ready on http://127.0.0.1:{self.config.port}", flush=True)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        # Let go of the port at once on SIGTERM (uvicorn would at its next 0.1 s tick): the
        # Playground starts the next generation on this same port as soon as it is free,
        # while this one finishes its open streams.
        super().handle_exit(sig, frame)
        loop = getattr(self, "loop", None)
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self.close_listeners)

    def close_listeners(self) -> None:
        for server in getattr(self, "servers", []):
            server.close()


def main() -> None:
    port_raw = os.environ.get("LLAMON_HOST_PORT")
    if not port_raw:
        sys.exit("LLAMON_HOST_PORT is required")
    port = int(port_raw)
    versions = parse_versions(os.environ.get("LLAMON_A2A_VERSIONS", "1.0,0.3"))
    delay_s = int(os.environ.get("ECHO_CHUNK_DELAY_MS", "0")) / 1000
    slow_ticks = int(os.environ.get("ECHO_SLOW_TICKS", str(SLOW_TICKS)))
    schemas = parse_schemas(os.environ.get("ECHO_INPUT_SCHEMAS", ""))

    card = build_card(port, versions, schemas)
    # Traced with OpenTelemetry when an OTLP endpoint is set and the otel extra installed:
    # its spans join the run's trace (docs/tracing.md).
    executor = traced_executor(
        EchoAgentExecutor(chunk_delay_s=delay_s, slow_ticks=slow_ticks), card.name)
    app = traced_app(build_app(card, executor))
    config = uvicorn.Config(
        # Only the daemon's requests, never a web page's (docs/security.md, the Host).
        LoopbackGuard(app, port),
        host="127.0.0.1",
        port=port,
        log_level="warning",
        access_log=False,
        # Open SSE streams would otherwise hold SIGTERM shutdown hostage.
        timeout_graceful_shutdown=1,
    )
    ReadyServer(config).run()


if __name__ == "__main__":
    main()
