"""A Flow's graph read with `ast`: nodes, edges, contracts, diagnostics, the stamp cache,
and source targets (the node's function by AST position)."""

from __future__ import annotations

import os
import shutil
import textwrap
from pathlib import Path

import pytest

from llamon_playground.daemon.introspect import validate_graph
from llamon_playground.daemon.introspect.errors import NodeNotFound, SourceNotFound
from llamon_playground.daemon.introspect.model import START
from llamon_playground.daemon.introspect.project_config import ProjectConfig, load_project_config
from llamon_playground.daemon.introspect.project_source import ProjectSource
from llamon_playground.daemon.introspect.source_targets import find_source_target
from tests.support.procs import REPO

FLOW_EXAMPLE = REPO / "examples" / "flow_project"
FLOW = ProjectConfig(kind="flow")


@pytest.fixture
def flow(tmp_path: Path) -> Path:
    return Path(shutil.copytree(FLOW_EXAMPLE, tmp_path / "flow",
                                ignore=shutil.ignore_patterns("__pycache__", ".llamon")))


def write(project: Path, rel: str, source: str) -> Path:
    path = project / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source))
    return path


def graph_of(project: Path, source: str) -> ProjectSource:
    write(project, "app/graph.py", source)
    return ProjectSource(project)


def codes(diags: object) -> list[str]:
    return [d.code for d in diags]  # type: ignore[attr-defined]


def test_example_graph_has_two_start_nodes_and_literal_contracts(flow: Path) -> None:
    graph = ProjectSource(flow).graph(load_project_config(flow))
    assert graph.diagnostics == ()
    assert graph.start_nodes() == ["approve", "escalate"]
    assert sorted(graph.nodes) == ["approve", "escalate", "notify"]
    approve = graph.nodes["approve"].contracts[0]  # through the APPROVAL_REQUEST constant
    assert (approve.name, approve.schema) == ("request", "approval.v1")
    types = {f.name: (f.type, f.required) for f in approve.fields}
    assert types == {"requestId": ("string", True), "amount": ("number", True),
                     "quantity": ("integer", False), "urgent": ("boolean", False),
                     "requester": ("object", True), "tags": ("array", False)}
    escalate = graph.nodes["escalate"].contracts[0]
    assert (escalate.name, escalate.schema) == ("request", "escalation.v1")
    assert graph.imports["nodes"] == "app.nodes"


def test_syntax_error_is_a_diagnostic_with_line_and_column(tmp_path: Path) -> None:
    source = graph_of(tmp_path, """\
        from app.flowkit import START
        graph.add_node("a", f)
        graph.add_edge(START, "a"
    """)
    graph = source.graph(FLOW)
    assert not graph.parsed and graph.nodes == {}
    [diag] = graph.diagnostics
    assert diag.code == "syntax_error" and diag.file == "app/graph.py"
    assert diag.line == 3 and diag.column == 15 and diag.severity == "error"
    assert "syntax error" in diag.message


def test_unknown_node_in_an_edge_is_an_error_at_the_edge(tmp_path: Path) -> None:
    source = graph_of(tmp_path, """\
        graph.add_node("a", nodes.a)
        graph.add_edge(START, "a")
        graph.add_edge("a",   "ghost")
    """)
    graph = source.graph(FLOW)
    [diag] = graph.diagnostics
    assert (diag.code, diag.line, diag.column, diag.severity) == ("unknown_node", 3, 1, "error")
    assert "'ghost'" in diag.message and "a" in diag.message


def column_of(source: str, line: int, token: str) -> int:
    return textwrap.dedent(source).splitlines()[line - 1].index(token) + 1


def test_contract_that_is_not_a_literal_is_reported_where_it_is(tmp_path: Path) -> None:
    text = """\
        graph.add_node("a", nodes.a, input_contracts=[make_contract("x"), DataContract(
            name="ok", schema="ok.v1", fields={"n": "integer"})])
        graph.add_node("b", nodes.b, input_contracts=contracts())
        graph.add_node("c", nodes.c, input_contracts=[DataContract(name="c", fields=FIELDS)])
        graph.add_edge(START, "a")
        graph.add_edge(START, "b")
        graph.add_edge(START, "c")
    """
    graph = graph_of(tmp_path, text).graph(FLOW)
    found = [(d.code, d.line, d.column) for d in graph.diagnostics]
    assert found == [("contract_not_literal", 1, column_of(text, 1, "make_contract")),
                     ("contract_not_literal", 3, column_of(text, 3, "contracts()")),
                     ("contract_not_literal", 4, column_of(text, 4, "FIELDS"))]
    assert all(d.severity == "warning" for d in graph.diagnostics)
    assert [c.name for c in graph.nodes["a"].contracts] == ["ok"]  # the literal one is kept
    assert "make_contract" in graph.diagnostics[0].message


def test_unknown_field_type_and_bad_required_are_reported(tmp_path: Path) -> None:
    source = graph_of(tmp_path, """\
        graph.add_node("a", f, input_contracts=[DataContract(name="x", schema="x.v1", fields={
            "when": "datetime", "n": {"type": "integer", "required": "yes"}})])
        graph.add_edge(START, "a")
    """)
    graph = source.graph(FLOW)
    assert codes(graph.diagnostics) == ["unknown_field_type", "invalid_contract"]
    fields = graph.nodes["a"].contracts[0].fields
    assert [(f.name, f.type, f.required) for f in fields] == [("when", "datetime", False),
                                                               ("n", "integer", False)]


def test_names_assigned_once_are_followed_and_rebound_ones_are_not(tmp_path: Path) -> None:
    source = graph_of(tmp_path, """\
        NODE = "a"
        C = DataContract(name="c", schema="c.v1")
        CONTRACTS = [C]
        AGAIN = DataContract(name="again")
        AGAIN = DataContract(name="again2")
        graph.add_node(NODE, f, input_contracts=CONTRACTS)
        graph.add_node("b", g, input_contracts=[AGAIN])
        graph.add_edge(START, NODE)
        graph.add_edge(flowkit.START, "b")
    """)
    graph = source.graph(FLOW)
    assert graph.start_nodes() == ["a", "b"]
    assert [c.schema for c in graph.nodes["a"].contracts] == ["c.v1"]
    assert codes(graph.diagnostics) == ["contract_not_literal"]


def test_duplicate_node_and_missing_start(tmp_path: Path) -> None:
    source = graph_of(tmp_path, """\
        g.add_node("a", f)
        g.add_node("a", f)
    """)
    graph = source.graph(FLOW)
    assert codes(graph.diagnostics) == ["duplicate_node", "no_start_node"]
    assert graph.diagnostics[0].line == 2
    assert graph.edges == ()


def test_cache_reparses_only_when_mtime_or_size_changes(flow: Path) -> None:
    source = ProjectSource(flow)
    config = load_project_config(flow)
    first = source.graph(config)
    assert source.graph(config) is first and source.graphs.builds == 1
    path = flow / "app" / "graph.py"
    text = path.read_text()
    # Same size, new mtime: still seen (the stamp is mtime *and* size).
    path.write_text(text.replace('"approve"', '"approvE"'))
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    second = source.graph(config)
    assert source.graphs.builds == 2 and "approvE" in second.nodes
    assert second.start_nodes() == ["approvE", "escalate"]


def test_missing_or_escaping_graph_file(tmp_path: Path) -> None:
    source = ProjectSource(tmp_path)
    assert codes(source.graph(FLOW).diagnostics) == ["graph_missing"]
    outside = ProjectConfig(kind="flow", graph="../elsewhere/graph.py")
    assert codes(source.graph(outside).diagnostics) == ["graph_outside_project"]


def test_validate_graph_for_the_executor(flow: Path, tmp_path: Path) -> None:
    config = load_project_config(flow)
    assert validate_graph(flow, config) == []
    assert validate_graph(flow, ProjectConfig(kind="agent", graph="nope.py")) == []
    (flow / "app" / "graph.py").write_text("graph.add_edge(START, 'x'\n")
    [diag] = validate_graph(flow, config)
    assert diag.severity == "error" and diag.location()["file"] == "app/graph.py"
    assert "message" not in diag.location()  # fits RunFailure(reason, message, **location)


# -- source targets ---------------------------------------------------------------------------

def def_position(path: Path, name: str) -> tuple[int, int]:
    for number, line in enumerate(path.read_text().splitlines(), 1):
        stripped = line.lstrip()
        if stripped.startswith((f"def {name}(", f"async def {name}(")):
            return number, len(line) - len(stripped) + 1
    raise AssertionError(f"no def {name} in {path}")


def test_source_target_of_each_example_node_matches_the_file(flow: Path) -> None:
    source = ProjectSource(flow)
    graph = source.graph(load_project_config(flow))
    nodes_py = flow / "app" / "nodes.py"
    for node_id in ("approve", "escalate", "notify"):
        target = find_source_target(source, graph, node_id)
        assert (target.file, target.function) == ("app/nodes.py", node_id)
        assert (target.span.line, target.span.column) == def_position(nodes_py, node_id)
        assert target.span.end_line > target.span.line


def test_rename_and_move_are_picked_up(flow: Path) -> None:
    source = ProjectSource(flow)
    config = load_project_config(flow)
    nodes_py = flow / "app" / "nodes.py"
    text = nodes_py.read_text()
    nodes_py.write_text("# moved down\n\n\n" + text.replace("def approve(", "def approve_v2("))
    graph = source.graph(config)
    with pytest.raises(SourceNotFound, match="approve"):
        find_source_target(source, graph, "approve")
    graph_py = flow / "app" / "graph.py"
    graph_py.write_text(graph_py.read_text().replace("nodes.approve", "nodes.approve_v2"))
    target = find_source_target(source, source.graph(config), "approve")
    assert target.function == "approve_v2"
    assert (target.span.line, target.span.column) == def_position(nodes_py, "approve_v2")


def test_functions_followed_through_imports_classes_and_the_graph_module(tmp_path: Path
                                                                         ) -> None:
    write(tmp_path, "app/__init__.py", "")
    write(tmp_path, "app/impl.py", """\
        class Steps:
            @staticmethod
            async def check(data):
                return data
        def réponse(data):  # a non-ASCII name: columns count characters, not bytes
            return data
    """)
    write(tmp_path, "app/nodes.py", "from .impl import réponse as answer\n")
    source = graph_of(tmp_path, """\
        from . import nodes
        from .impl import Steps
        import app.impl
        def local(data):
            return data
        g.add_node("a", nodes.answer)
        g.add_node("b", Steps.check)
        g.add_node("c", local)
        g.add_node("d", app.impl.réponse)
        g.add_node("e", lambda data: data)
        g.add_node("f", make())
        g.add_node("g", missing.fn)
    """)
    graph = source.graph(FLOW)
    found = {n: find_source_target(source, graph, n) for n in "abcde"}
    assert (found["a"].file, found["a"].function, found["a"].span.line) == (
        "app/impl.py", "réponse", 5)
    assert (found["b"].qualname, found["b"].span.line, found["b"].span.column) == (
        "Steps.check", 3, 5)
    assert (found["c"].file, found["c"].span.line) == ("app/graph.py", 4)
    assert found["d"].function == "réponse"
    assert (found["e"].function, found["e"].span.line, found["e"].span.column) == (
        "<lambda>", 10, 17)
    with pytest.raises(SourceNotFound, match="expression"):
        find_source_target(source, graph, "f")
    with pytest.raises(SourceNotFound, match=r"missing\.fn"):
        find_source_target(source, graph, "g")
    with pytest.raises(NodeNotFound, match="nodes: a, b, c, d, e, f, g"):
        find_source_target(source, graph, "zz")


def test_start_node_order_follows_edges(tmp_path: Path) -> None:
    source = graph_of(tmp_path, """\
        g.add_node("a", f)
        g.add_node("b", f)
        g.add_edge(START, "b")
        g.add_edge(START, "a")
        g.add_edge(START, "b")
    """)
    graph = source.graph(FLOW)
    assert graph.start_nodes() == ["b", "a"]
    assert [e.source for e in graph.edges] == [START] * 3
