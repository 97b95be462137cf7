"""flow_project Host: serves the approval Flow (app/graph.py) as a real A2A server.

Started by the llamon daemon as ``{python} -m app.host`` with cwd = the project folder.
Environment: ``LLAMON_HOST_PORT`` (required), the TCP port; we bind 127.0.0.1 only,
behind the Playground's LoopbackGuard (loopback Host header, no cross-site Origin, JSON bodies).

A message's first data part picks the start node: the first node connected from START with
an input contract whose schema id equals ``data["schema"]``. The Flow runs along its edges
and the task completes with one artifact: a text summary and the last node's output as a
data part. Input no start node accepts is rejected. For a Playground request it reports
each node's start and end (with their times) as they happen, and then one evaluator
result, `decided`, back to the daemon over the capture channel. A request tagged "slow"
(`"tags": ["slow"]`) makes `approve` take 4 s (app/nodes.py), to watch a node run.
"""

from __future__ import annotations

import asyncio
import os
import socket
import sys
from types import FrameType
from typing import Any

import uvicorn
from a2a.helpers import new_data_part, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import TaskUpdater
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Message,
    Task,
    TaskState,
    TaskStatus,
)
from google.protobuf.json_format import MessageToDict
from starlette.applications import Starlette

from app.flowkit import END, Graph, node_event
from app.graph import graph as approval_graph
from llamon_playground.host_manager.host_side.capture import (
    LoopbackGuard,
    PlaygroundCapture,
    open_envelope,
)
from llamon_playground.host_manager.host_side.otel import traced_app, traced_executor
from llamon_playground.host_manager.host_side.task_store import StreamingTaskStore

RPC_PATH = "/"


def first_data(message: Message | None) -> dict[str, Any] | None:
    for part in message.parts if message is not None else []:
        if part.HasField("data"):
            data = MessageToDict(part.data)
            return data if isinstance(data, dict) else None
    return None


def decided(result: dict[str, Any], last_node: str) -> dict[str, Any]:
    """An evaluator over the Flow's result: did it reach a decision without a reviewer?"""
    decision = str(result.get("decision", ""))
    ok = decision not in ("", "needs_review")
    return {"type": "evaluation.result", "evaluator": "decided", "score": 1.0 if ok else 0.0,
            "passStatus": "pass" if ok else "fail", "node": last_node, "scope": "node",
            "reason": f"request {result.get('requestId', '')}: {decision or 'no decision'}"}


class FlowExecutor(AgentExecutor):
    def __init__(self, graph: Graph, capture: PlaygroundCapture | None = None) -> None:
        self._graph = graph
        # The Playground's capture channel (None outside it): node traces and the evaluator
        # result go back to the daemon for the run that sent the request.
        self._capture = capture

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        # The reserved envelope is stripped before anything else sees metadata.
        _, run_id = open_envelope(self._capture, context.metadata)
        updater = TaskUpdater(event_queue, context.task_id or "", context.context_id or "")
        if context.current_task is None:
            history = [context.message] if context.message is not None else []
            await event_queue.enqueue_event(Task(
                id=context.task_id, context_id=context.context_id,
                status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED), history=history))
        await updater.start_work()
        data = first_data(context.message)
        entry = self._graph.entry_for(data.get("schema")) if data is not None else None
        if data is None or entry is None:
            schemas = sorted({c.schema for n in self._graph.nodes.values()
                              for c in n.input_contracts})
            await updater.reject(updater.new_agent_message([new_text_part(
                f"send a data part whose schema is one of: {', '.join(schemas)}")]))
            return
        node, _contract = entry
        visited, result = await self.run_flow(node.id, data, run_id)
        if self._capture is not None and run_id is not None:
            await self._capture.aemit(run_id, [decided(result, visited[-1])])
        summary = f"{' -> '.join(visited)}: {result.get('decision', 'done')}"
        await updater.add_artifact([new_text_part(summary), new_data_part(result)],
                                   name="result", last_chunk=True)
        await updater.complete()

    async def run_flow(self, node_id: str, data: dict[str, Any], run_id: str | None
                       ) -> tuple[list[str], dict[str, Any]]:
        """Run the Flow node by node, each in a worker thread (a slow node never holds up
        the server), sending each node's start and end over the capture channel as it
        happens, as a llamon Flow's NodeTracer does: the Playground's graph lights the node
        that runs while it runs."""
        visited: list[str] = []
        current = node_id
        while current != END:
            visited.append(current)
            # The start goes out while the node runs (its time is the node's, not the
            # send's); it is sent before the end all the same.
            sending = asyncio.ensure_future(self.trace(run_id, node_event("node.start", current)))
            try:
                data = await asyncio.to_thread(self._graph.nodes[current].func, data)
            finally:
                await sending
            await self.trace(run_id, node_event("node.end", current))
            current = self._graph.successor(current)
        return visited, data

    async def trace(self, run_id: str | None, event: dict[str, Any]) -> None:
        if self._capture is not None and run_id is not None:
            await self._capture.aemit(run_id, [event])

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        # Every run finishes in one step; there is nothing to interrupt.
        await TaskUpdater(event_queue, context.task_id or "", context.context_id or "").cancel()


def build_card(port: int, graph: Graph) -> AgentCard:
    return AgentCard(
        name=graph.name,
        description="Example llamon Flow: approve or escalate a request, then notify.",
        version="0.1.0",
        supported_interfaces=[AgentInterface(url=f"http://127.0.0.1:{port}{RPC_PATH}",
                                             protocol_binding="JSONRPC", protocol_version="1.0")],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["application/json"],
        default_output_modes=["text/plain", "application/json"],
        skills=[AgentSkill(id="approval", name="Approval",
                           description="Send {\"schema\": \"approval.v1\", ...} or "
                                       "{\"schema\": \"escalation.v1\", ...} as a data part.",
                           tags=["flow"])],
    )


def new_task_store() -> StreamingTaskStore:
    """The SDK's default store deep-copies the whole task, every artifact chunk so far
    included, on each save (once per streamed event): a run's cost would grow with its
    length. This one keeps the task the SDK already holds, streamed text in few parts."""
    return StreamingTaskStore()


class PortReleasingServer(uvicorn.Server):
    """uvicorn.Server that closes its listener as soon as it is asked to stop."""

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        self.loop = asyncio.get_running_loop()
        await super().startup(sockets=sockets)

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
    card = build_card(port, approval_graph)
    # Traced with OpenTelemetry when an OTLP endpoint is set and the otel extra installed:
    # its spans join the run's trace (docs/tracing.md).
    executor = traced_executor(FlowExecutor(approval_graph, PlaygroundCapture.from_env()),
                               card.name)
    handler = DefaultRequestHandler(agent_executor=executor, task_store=new_task_store(),
                                    agent_card=card)
    app = traced_app(Starlette(routes=[*create_agent_card_routes(card),
                                       *create_jsonrpc_routes(handler, rpc_url=RPC_PATH)]))
    print(f"flow_project starting on http://127.0.0.1:{port}", flush=True)
    # Only the daemon's requests, never a web page's (docs/security.md, the Host).
    PortReleasingServer(uvicorn.Config(
        LoopbackGuard(app, port), host="127.0.0.1", port=port, log_level="warning",
        access_log=False, timeout_graceful_shutdown=1)).run()


if __name__ == "__main__":
    main()
