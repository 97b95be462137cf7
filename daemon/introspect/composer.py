"""The input composer's answer (GET /composer-schema) and a Flow's tabs.

One tab per input contract of every node connected directly from START, the same contract
name on two start nodes giving two tabs. The contract name is the tab's label, never a field
the user types; the JSON draft is the whole DataPart `data`, with skeleton values and the
contract's schema id already in `data.schema`. Required marks are only shown: they change no
runtime validation.
"""

from __future__ import annotations

import copy
from typing import Any

from llamon_playground.daemon.introspect.model import Contract, Diagnostic, GraphModel

SKELETONS: dict[str, Any] = {"string": "", "number": 0, "integer": 0, "boolean": False,
                             "object": {}, "array": []}


def skeleton(field_type: str) -> Any:
    """The initial value of a field of this type (None for a type we do not know)."""
    return copy.copy(SKELETONS.get(field_type))


def draft_for(contract: Contract) -> dict[str, Any]:
    draft: dict[str, Any] = {}
    if contract.schema is not None:
        draft["schema"] = contract.schema
    for field in contract.fields:
        if field.name == "schema" and contract.schema is not None:
            continue  # the declared schema id wins over a field's skeleton
        draft[field.name] = skeleton(field.type)
    return draft


def contract_tab(tab_id: str, node_id: str, contract: Contract, file: str) -> dict[str, Any]:
    return {
        "id": tab_id,
        "composer": "data",
        "node_id": node_id,
        "contract": contract.name,
        "schema": contract.schema,
        "fields_declared": True,
        "fields": [{"name": f.name, "type": f.type, "required": f.required,
                    **({"description": f.description} if f.description else {})}
                   for f in contract.fields],
        "draft": draft_for(contract),
        "source": {"file": file, "line": contract.span.line, "column": contract.span.column},
    }


def text_composer(input_modes: list[str] | None = None,
                  examples: list[dict[str, Any]] | None = None,
                  skills: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"input_modes": input_modes or [], "examples": examples or [],
            "skills": skills or [], "draft": ""}


def answer(kind: str | None, host_ready: bool, tabs: list[dict[str, Any]],
           diagnostics: list[Diagnostic], text: dict[str, Any] | None = None,
           **extra: Any) -> dict[str, Any]:
    """The one shape of GET /composer-schema: data tabs, or else a text composer."""
    if not tabs and text is None:
        text = text_composer()
    return {"kind": kind, "mode": "data" if tabs else "text", "host_ready": host_ready,
            "tabs": tabs, "text": None if tabs else text,
            "diagnostics": [d.as_dict() for d in diagnostics], **extra}


def flow_tabs(graph: GraphModel) -> tuple[list[dict[str, Any]], list[Diagnostic]]:
    tabs: list[dict[str, Any]] = []
    notes: list[Diagnostic] = []
    used: set[str] = set()
    for node_id in graph.start_nodes():
        node = graph.nodes[node_id]
        if not node.contracts:
            notes.append(Diagnostic("no_input_contracts",
                                    f"start node {node_id!r} declares no input_contracts",
                                    graph.file, node.span.line, node.span.column, "info"))
        for contract in node.contracts:
            tab_id = f"{node_id}:{contract.name}"
            n = 2
            while tab_id in used:  # one node listing one contract name twice
                tab_id, n = f"{node_id}:{contract.name}#{n}", n + 1
            used.add(tab_id)
            tabs.append(contract_tab(tab_id, node_id, contract, graph.file))
    return tabs, notes


def flow_composer(graph: GraphModel, host_ready: bool, stamp: dict[str, Any]) -> dict[str, Any]:
    """The composer for a Flow: tabs from its graph's start nodes, the graph to draw and its
    diagnostics."""
    tabs, notes = flow_tabs(graph)
    return answer("flow", host_ready, tabs, [*graph.diagnostics, *notes], source="graph",
                  graph={"file": graph.file, **stamp, "start_nodes": graph.start_nodes(),
                         "nodes": sorted(graph.nodes),
                         # The page draws the graph from these (START and END included).
                         "edges": [[e.source, e.target] for e in graph.edges]})
