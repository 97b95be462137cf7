"""Composer schema and source targets of a Flow, from the real daemon reading a copy of
examples/flow_project as it is on disk (edited by the tests between calls)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support.api import Api
from tests.support.procs import REPO

FLOW_EXAMPLE = REPO / "examples" / "flow_project"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """Overrides conftest's echo_agent copy: these tests serve the Flow example."""
    return Path(shutil.copytree(FLOW_EXAMPLE, tmp_path / "flow_project",
                                ignore=shutil.ignore_patterns(".llamon", "__pycache__")))


def def_position(path: Path, name: str) -> tuple[int, int]:
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if line.lstrip().startswith(f"def {name}("):
            return number, len(line) - len(line.lstrip()) + 1
    raise AssertionError(f"no def {name} in {path}")


async def test_composer_tabs_follow_the_graph_file_on_disk(direct: Api, project: Path) -> None:
    answer = await direct.ok("GET", "composer-schema")
    assert (answer["kind"], answer["mode"], answer["diagnostics"]) == ("flow", "data", [])
    assert [(t["node_id"], t["contract"], t["schema"]) for t in answer["tabs"]] == [
        ("approve", "request", "approval.v1"), ("escalate", "request", "escalation.v1")]
    assert answer["tabs"][0]["draft"] == {"schema": "approval.v1", "requestId": "", "amount": 0,
                                          "quantity": 0, "urgent": False, "requester": {},
                                          "tags": []}
    assert answer["tabs"][1]["draft"]["schema"] == "escalation.v1"
    # The edges as written, START and END by their ids: what the page draws the graph from.
    assert ["__start__", "approve"] in answer["graph"]["edges"]
    assert all(len(edge) == 2 for edge in answer["graph"]["edges"])

    # An edit is seen on the very next call: a new field and a third start node.
    graph_py = project / "app" / "graph.py"
    original = graph_py.read_text()
    graph_py.write_text(original.replace('"reason": "string",',
                                         '"reason": "string", "extra": {"type": "boolean"},')
                        + 'graph.add_edge(START, "notify")\n')
    edited = await direct.ok("GET", "composer-schema")
    assert edited["graph"]["mtime_ns"] != answer["graph"]["mtime_ns"]
    assert edited["graph"]["start_nodes"] == ["approve", "escalate", "notify"]
    assert edited["tabs"][1]["draft"]["extra"] is False
    assert [d["code"] for d in edited["diagnostics"]] == ["no_input_contracts"]

    # A syntax error: a clear diagnostic in a 200 answer, never a 500.
    graph_py.write_text(original.replace('graph.add_node("notify", nodes.notify)',
                                         'graph.add_node("notify", nodes.notify'))
    broken = await direct.ok("GET", "composer-schema")
    assert broken["tabs"] == [] and broken["mode"] == "text"
    [diag] = broken["diagnostics"]
    assert diag["code"] == "syntax_error" and diag["file"] == "app/graph.py"
    assert diag["severity"] == "error" and diag["line"] >= 30 and "syntax" in diag["message"]
    code, doc = await direct.call("GET", "source-targets/approve")
    assert code == 422 and doc["detail"]["error"] == "graph_invalid"
    assert doc["detail"]["diagnostics"][0]["line"] == diag["line"]

    # An edge to a node that does not exist.
    graph_py.write_text(original.replace('graph.add_edge("notify", END)',
                                         'graph.add_edge("notify", "archive")'))
    unknown = await direct.ok("GET", "composer-schema")
    [diag] = unknown["diagnostics"]
    assert diag["code"] == "unknown_node" and "'archive'" in diag["message"]
    line = next(n for n, text in enumerate(graph_py.read_text().splitlines(), 1)
                if "archive" in text)
    assert (diag["line"], diag["column"]) == (line, 1)

    graph_py.write_text(original)
    assert (await direct.ok("GET", "composer-schema"))["tabs"] == answer["tabs"]


async def test_source_targets_match_the_file_and_follow_renames(direct: Api,
                                                                project: Path) -> None:
    nodes_py = project / "app" / "nodes.py"
    for node_id in ("approve", "escalate", "notify"):
        target = await direct.ok("GET", f"source-targets/{node_id}")
        assert (target["file"], target["function"]) == ("app/nodes.py", node_id)
        assert (target["line"], target["column"]) == def_position(nodes_py, node_id)
        lines = nodes_py.read_text().splitlines()
        end = target["end_line"]  # the function's last line: a blank line or EOF follows
        assert end > target["line"] and (end == len(lines) or not lines[end].strip())
        assert target["end_column"] == len(lines[end - 1]) + 1

    # Rename in nodes.py only: the graph's reference no longer resolves.
    text = nodes_py.read_text()
    nodes_py.write_text(text.replace("def escalate(", "def escalate_request("))
    code, doc = await direct.call("GET", "source-targets/escalate")
    assert code == 404 and doc["detail"]["error"] == "source_not_found"
    assert "escalate" in doc["detail"]["message"]
    # ...then in the graph too, and moved further down the file.
    nodes_py.write_text("\n\n# moved\n" + text.replace("def escalate(", "def escalate_request("))
    graph_py = project / "app" / "graph.py"
    graph_py.write_text(graph_py.read_text().replace("nodes.escalate", "nodes.escalate_request"))
    target = await direct.ok("GET", "source-targets/escalate")
    assert target["function"] == "escalate_request"
    assert (target["line"], target["column"]) == def_position(nodes_py, "escalate_request")

    code, doc = await direct.call("GET", "source-targets/archive")
    assert code == 404
    assert doc["detail"]["error"] == "node_not_found"
    assert "approve, escalate, notify" in doc["detail"]["message"]

    # A pyproject.toml that does not parse: a diagnostic or a 422, never a 500.
    (project / "pyproject.toml").write_text("[tool.llamon\n")
    answer = await direct.ok("GET", "composer-schema")
    assert answer["kind"] is None and answer["tabs"] == []
    assert [(d["code"], d["file"]) for d in answer["diagnostics"]] == [
        ("project_invalid", "pyproject.toml")]
    code, doc = await direct.call("GET", "source-targets/approve")
    assert code == 422 and doc["detail"]["error"] == "project_invalid"


async def test_the_composer_draft_runs_on_the_flow_host(api: Api) -> None:
    """Through the front, as Studio: the escalate tab's draft, filled in, is a valid input."""
    answer = await api.ok("GET", "composer-schema")
    tab = next(t for t in answer["tabs"] if t["node_id"] == "escalate")
    data = {**tab["draft"], "requestId": "R-7", "level": 2, "reason": "over budget"}
    session = await api.session()
    run_id = (await api.ok("POST", f"sessions/{session}/runs",
                           {"parts": [{"kind": "data", "data": data}]}, 202))["run_id"]
    run = await api.wait_status(run_id)
    assert run["status"] == "completed", run
    text, result = run["output"]
    assert text == {"kind": "text", "text": "escalate -> notify: escalated"}
    assert result["data"]["decision"] == "escalated" and result["data"]["notified"] is True
    assert result["data"]["requestId"] == "R-7"
    # The composer still answers from the source while the Host runs.
    again = await api.ok("GET", "composer-schema")
    assert again["host_ready"] is True and again["tabs"] == answer["tabs"]
    # The Flow Host reports its nodes with its own times, then its evaluator.
    traces = [e.data for e in await api.events(run_id) if e.event == "trace"]
    assert [(t["type"], t.get("node")) for t in traces] == [
        ("node.start", "escalate"), ("node.end", "escalate"), ("node.start", "notify"),
        ("node.end", "notify"), ("evaluation.result", "notify")]
    times = [t["ts"] for t in traces[:4]]
    assert times == sorted(times) and len(set(times)) > 1  # the Host's, not one arrival
    assert run["scores"][0]["evaluator"] == "decided" and run["scores"][0]["passStatus"] == "pass"
