"""The input composer: a Flow's contract tabs, skeleton drafts, and the AgentCard fallbacks."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path
from typing import Any

from llamon_playground.daemon.introspect.agent_card import (
    INPUT_SCHEMAS_URI,
    agent_composer,
    input_schemas,
    source_only_composer,
)
from llamon_playground.daemon.introspect.composer import flow_composer, skeleton
from llamon_playground.daemon.introspect.project_config import ProjectConfig, load_project_config
from llamon_playground.daemon.introspect.project_source import ProjectSource
from tests.support.procs import REPO

FLOW_EXAMPLE = REPO / "examples" / "flow_project"


def composer_for(project: Path) -> dict[str, Any]:
    graph = ProjectSource(project).graph(load_project_config(project))
    return flow_composer(graph, False, {})


def test_skeleton_value_of_every_type() -> None:
    assert [skeleton(t) for t in ("string", "number", "integer", "boolean", "object", "array")
            ] == ["", 0, 0, False, {}, []]
    assert skeleton("datetime") is None
    first, second = skeleton("object"), skeleton("object")
    first["x"] = 1
    assert second == {}  # never a shared mutable default


def test_example_flow_gives_one_tab_per_contract_of_each_start_node() -> None:
    answer = composer_for(FLOW_EXAMPLE)
    assert answer["kind"] == "flow" and answer["mode"] == "data" and answer["text"] is None
    assert answer["diagnostics"] == []
    assert answer["graph"]["start_nodes"] == ["approve", "escalate"]
    tabs = answer["tabs"]
    # The same contract name on two start nodes: two tabs, told apart by node and schema.
    assert [(t["id"], t["node_id"], t["contract"], t["schema"]) for t in tabs] == [
        ("approve:request", "approve", "request", "approval.v1"),
        ("escalate:request", "escalate", "request", "escalation.v1")]
    approve = tabs[0]
    assert approve["fields_declared"] is True
    assert approve["draft"] == {"schema": "approval.v1", "requestId": "", "amount": 0,
                                "quantity": 0, "urgent": False, "requester": {}, "tags": []}
    assert next(iter(approve["draft"])) == "schema"
    assert "request" not in approve["draft"].values()  # the name is a label, not a field
    required = {f["name"]: f["required"] for f in approve["fields"]}
    assert required == {"requestId": True, "amount": True, "quantity": False, "urgent": False,
                        "requester": True, "tags": False}
    assert approve["fields"][4]["description"].startswith("who asks")
    assert tabs[1]["draft"] == {"schema": "escalation.v1", "requestId": "", "level": 0,
                                "reason": ""}
    assert approve["source"]["file"] == "app/graph.py" and approve["source"]["line"] > 1


def test_declared_schema_wins_and_a_contract_without_schema_has_no_schema_key(
        tmp_path: Path) -> None:
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "graph.py").write_text(textwrap.dedent("""\
        g.add_node("a", f, input_contracts=[
            DataContract(name="x", schema="x.v2", fields={"schema": "string", "n": "number"}),
            DataContract(name="x", fields={"n": "number"}),
        ])
        g.add_node("b", f)
        g.add_edge(START, "a")
        g.add_edge(START, "b")
    """))
    answer = flow_composer(ProjectSource(tmp_path).graph(ProjectConfig(kind="flow")), False,
                           {})
    assert [t["id"] for t in answer["tabs"]] == ["a:x", "a:x#2"]
    assert [t["draft"] for t in answer["tabs"]] == [{"schema": "x.v2", "n": 0}, {"n": 0}]
    assert [d["code"] for d in answer["diagnostics"]] == ["no_input_contracts"]


def test_broken_graph_gives_diagnostics_and_a_text_composer(tmp_path: Path) -> None:
    project = Path(shutil.copytree(FLOW_EXAMPLE, tmp_path / "flow"))
    (project / "app" / "graph.py").write_text("graph.add_node('a', f\n")
    answer = composer_for(project)
    assert answer["mode"] == "text" and answer["tabs"] == []
    assert answer["text"]["draft"] == ""
    [diag] = answer["diagnostics"]
    assert diag["code"] == "syntax_error" and diag["file"] == "app/graph.py"
    assert diag["line"] == 1 and diag["message"]


CARD: dict[str, Any] = {
    "name": "echo_agent", "version": "0.1.0",
    "defaultInputModes": ["text/plain", "application/json"],
    "skills": [
        {"id": "echo", "name": "Echo", "description": "echoes", "examples": ["stream hi", "ask"]},
        {"id": "files", "name": "Files", "inputModes": ["application/pdf"],
         "examples": ["summarise this"]},
    ],
}


def with_schemas(params: Any) -> dict[str, Any]:
    extensions = [{"uri": "urn:other"}, {"uri": INPUT_SCHEMAS_URI, "params": params}]
    return {**CARD, "capabilities": {"streaming": True, "extensions": extensions}}


def test_agent_with_input_schemas_offers_schema_drafts_with_undeclared_fields() -> None:
    answer = agent_composer("agent", with_schemas({"schemas": ["approval.v1", "other.v2",
                                                               "approval.v1"]}))
    assert answer["mode"] == "data" and answer["host_ready"] is True
    assert answer["text"] is None and answer["source"] == "agent_card"
    assert [t["draft"] for t in answer["tabs"]] == [{"schema": "approval.v1"},
                                                     {"schema": "other.v2"}]
    assert all(t["fields_declared"] is False and t["fields"] == [] for t in answer["tabs"])


def test_agent_without_schemas_gets_a_text_composer_with_modes_and_examples() -> None:
    answer = agent_composer("orchestrator", CARD)
    assert answer["kind"] == "orchestrator" and answer["mode"] == "text"
    assert answer["tabs"] == []
    text = answer["text"]
    assert text["input_modes"] == ["text/plain", "application/json"]
    assert [(e["skill_id"], e["text"]) for e in text["examples"]] == [
        ("echo", "stream hi"), ("echo", "ask"), ("files", "summarise this")]
    assert [s["input_modes"] for s in text["skills"]] == [["text/plain", "application/json"],
                                                           ["application/pdf"]]


def test_malformed_input_schemas_extension_is_a_diagnostic() -> None:
    names, notes = input_schemas(with_schemas({"schemas": "approval.v1"}))
    assert names == [] and [n.code for n in notes] == ["invalid_input_schemas"]
    names, notes = input_schemas(with_schemas({"schemas": ["ok.v1", 3, ""]}))
    assert names == ["ok.v1"] and len(notes) == 2
    assert input_schemas({"capabilities": "junk"}) == ([], [])


def test_no_host_answers_from_the_source_only() -> None:
    answer = source_only_composer("agent", "the Host is not running (state: stopped)")
    assert answer["host_ready"] is False and answer["mode"] == "text"
    assert answer["text"]["examples"] == []
    [note] = answer["diagnostics"]
    assert note["code"] == "host_not_ready" and note["severity"] == "info"
    assert "not running" in note["message"]
