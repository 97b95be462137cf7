"""A tiny stand-in for llamon's Flow API, so this example runs with a2a-sdk alone.

Only what the graph module uses: START, END, DataContract and Graph (add_node, add_edge).
The Playground never imports any of this: it reads app/graph.py as source
(docs/project-format.md). The Host (app/host.py) imports the graph and runs it with
`Graph.run`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

START = "__start__"
END = "__end__"

NodeFunc = Callable[[dict[str, Any]], dict[str, Any]]
# Receives NodeTracer-style events: {"type": "node.start" | "node.end", "node", "ts"}.
Tracer = Callable[[dict[str, Any]], None]


@dataclass(frozen=True)
class DataContract:
    """The input a start node accepts: `schema` travels as `data.schema` in the DataPart."""

    name: str
    schema: str
    fields: dict[str, Any] = field(default_factory=dict)


@dataclass
class Node:
    id: str
    func: NodeFunc
    input_contracts: list[DataContract]


class Graph:
    def __init__(self, name: str) -> None:
        self.name = name
        self.nodes: dict[str, Node] = {}
        self.edges: list[tuple[str, str]] = []

    def add_node(self, node_id: str, func: NodeFunc,
                 input_contracts: list[DataContract] | None = None) -> None:
        if node_id in self.nodes:
            raise ValueError(f"node {node_id!r} added twice")
        self.nodes[node_id] = Node(node_id, func, list(input_contracts or []))

    def add_edge(self, source: str, target: str) -> None:
        for end in (source, target):
            if end not in (START, END) and end not in self.nodes:
                raise ValueError(f"edge uses unknown node {end!r}")
        self.edges.append((source, target))

    def successor(self, node_id: str) -> str:
        """The first edge out of a node decides (this stand-in has no conditions)."""
        return next((t for s, t in self.edges if s == node_id), END)

    def entry_for(self, schema: object) -> tuple[Node, DataContract] | None:
        """The first node connected from START with an input contract for this schema id."""
        for source, target in self.edges:
            if source != START:
                continue
            for contract in self.nodes[target].input_contracts:
                if contract.schema == schema:
                    return self.nodes[target], contract
        return None

    def run(self, node_id: str, data: dict[str, Any], tracer: Tracer | None = None
            ) -> tuple[list[str], dict[str, Any]]:
        """Run from `node_id` along the edges until END: (visited node ids, last output).
        `tracer` gets each node's start and end with its time (Unix epoch seconds)."""
        visited: list[str] = []
        current = node_id
        while current != END:
            visited.append(current)
            data = self.step(current, data, tracer)
            current = self.successor(current)
        return visited, data

    def step(self, node_id: str, data: dict[str, Any], tracer: Tracer | None = None
             ) -> dict[str, Any]:
        """Run one node: its output. `tracer` gets the node's start before it runs and its
        end after, each when it happens (as a NodeTracer reports them)."""
        if tracer is not None:
            tracer(node_event("node.start", node_id))
        data = self.nodes[node_id].func(data)
        if tracer is not None:
            tracer(node_event("node.end", node_id))
        return data


def node_event(kind: str, node_id: str) -> dict[str, Any]:
    """A NodeTracer-style event, stamped now (Unix epoch seconds)."""
    return {"type": kind, "node": node_id, "ts": time.time()}
