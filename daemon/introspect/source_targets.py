"""Where a node's function lives: followed from the live graph's reference, found by AST.

The link from a trace to the code uses the live graph's function reference and the Python
AST position, not trace strings. `nodes.approve` in the graph module is followed through
that module's imports to a file of the project (usually app/nodes.py), then to the `def` in
that file's AST, read as the file is now (a rename or a move is seen on the next call). A
name the target module itself imports from elsewhere is followed too, a few hops at most.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llamon_playground.daemon.introspect.errors import NodeNotFound, SourceNotFound
from llamon_playground.daemon.introspect.graph_ast import module_imports
from llamon_playground.daemon.introspect.model import GraphModel, Span
from llamon_playground.daemon.introspect.project_source import ProjectSource

MAX_IMPORT_HOPS = 4
SOURCE_ROOTS = ("", "src/")

Definition = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Assign | ast.AnnAssign


@dataclass(frozen=True)
class SourceTarget:
    """The `def` a graph node runs: the file and the position an editor should open."""

    node_id: str
    file: str
    function: str
    qualname: str
    span: Span

    def as_dict(self) -> dict[str, Any]:
        return {"node_id": self.node_id, "file": self.file, "function": self.function,
                "qualname": self.qualname, **self.span.as_dict()}


def find_source_target(source: ProjectSource, graph: GraphModel, node_id: str) -> SourceTarget:
    """Where node `node_id`'s function is defined; NodeNotFound or SourceNotFound saying why not."""
    node = graph.nodes.get(node_id)
    if node is None:
        known = ", ".join(sorted(graph.nodes)) or "none"
        raise NodeNotFound(f"no node {node_id!r} in {graph.file} (nodes: {known})")
    ref = node.func
    if ref.is_lambda:
        return SourceTarget(node_id, graph.file, "<lambda>", "<lambda>", ref.span)
    if ref.dotted is None:
        raise SourceNotFound(f"node {node_id!r}: its function is an expression at "
                             f"{graph.file}:{ref.span.line}, not a name that can be followed")
    head, *rest = ref.dotted.split(".")
    imported = graph.imports.get(head)
    # Not imported: a function defined in the graph module itself.
    full = (imported.split(".") if imported else [*graph.module.split("."), head]) + rest
    return _locate(source, full, node_id, 0)


def _locate(source: ProjectSource, full: list[str], node_id: str, hops: int) -> SourceTarget:
    # The longest prefix that is a module file of the project; the rest is a qualname in it.
    for cut in range(len(full) - 1, 0, -1):
        path = _module_path(source, full[:cut])
        if path is not None:
            return _in_module(source, path, ".".join(full[:cut]), full[cut:], node_id, hops)
    raise SourceNotFound(f"node {node_id!r}: {'.'.join(full)} is not in the project's source")


def _module_path(source: ProjectSource, parts: list[str]) -> Path | None:
    stem = "/".join(parts)
    for root in SOURCE_ROOTS:
        for candidate in (f"{root}{stem}.py", f"{root}{stem}/__init__.py"):
            path = source.inside(candidate)
            if path is not None and path.is_file():
                return path
    return None


def _in_module(source: ProjectSource, path: Path, module: str, qual: list[str], node_id: str,
               hops: int) -> SourceTarget:
    rel = source.rel(path)
    try:
        parsed = source.module(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise SourceNotFound(f"node {node_id!r}: cannot read {rel}: {exc}") from exc
    if parsed.tree is None:
        assert parsed.error is not None
        raise SourceNotFound(f"node {node_id!r}: {rel} does not parse "
                             f"(line {parsed.error.line}: {parsed.error.message})")
    body: list[ast.stmt] = parsed.tree.body
    for index, name in enumerate(qual):
        found = _definition(body, name)
        if found is None and index == 0 and hops < MAX_IMPORT_HOPS:
            imports = module_imports(parsed.tree, module, path.name == "__init__.py")
            if name in imports:
                return _locate(source, imports[name].split(".") + qual[1:], node_id, hops + 1)
        last = index == len(qual) - 1
        if found is None or (not last and not isinstance(found, ast.ClassDef)):
            raise SourceNotFound(f"node {node_id!r}: no function {'.'.join(qual)} in {rel}")
        if last:
            return SourceTarget(node_id, rel, name, ".".join(qual), parsed.span(found))
        assert isinstance(found, ast.ClassDef)
        body = found.body
    raise SourceNotFound(f"node {node_id!r}: no function in {rel}")  # qual was empty


def _definition(body: list[ast.stmt], name: str) -> Definition | None:
    """The last binding of `name` in a block: the one that wins when the module runs."""
    found: Definition | None = None
    for stmt in body:
        if isinstance(stmt, Definition) and name in _names_bound(stmt):
            found = stmt
    return found


def _names_bound(stmt: Definition) -> list[str]:
    if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return [stmt.name]
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
    return [t.id for t in targets if isinstance(t, ast.Name)]
