"""A Flow's graph module read with `ast` (never imported): nodes, edges, input contracts.

The format (docs/project-format.md): anywhere in the module,

    graph.add_node("id", nodes.func, input_contracts=[DataContract(...), ...])
    graph.add_edge(START, "id")      # also "a" -> "b", and "b" -> END

Node ids, edge endpoints and contracts must be literals, or names assigned once at module
level to a literal (`APPROVAL = DataContract(...)`). What is not literal is reported as a
diagnostic with its file, line and column; nothing is evaluated.
"""

from __future__ import annotations

import ast

from llamon_playground.daemon.introspect.contracts import ContractReader, literal_str
from llamon_playground.daemon.introspect.model import (
    END,
    START,
    Diagnostic,
    FuncRef,
    GraphEdge,
    GraphModel,
    GraphNode,
    Severity,
    Span,
)
from llamon_playground.daemon.introspect.source_module import SourceModule

GRAPH_CALLS = ("add_node", "add_edge")
MAX_NAME_HOPS = 8  # A = B; B = "x": follow a few module-level names, never a cycle


def module_name(rel: str) -> str:
    """`app/graph.py` → `app.graph`; `src/` layouts drop the `src` folder."""
    parts = rel.removesuffix(".py").split("/")
    if len(parts) > 1 and parts[0] == "src":
        parts = parts[1:]
    if len(parts) > 1 and parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def dotted_name(expr: ast.expr) -> str | None:
    """`nodes.approve` → "nodes.approve"; None for anything but a chain of names."""
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, ast.Attribute):
        head = dotted_name(expr.value)
        return f"{head}.{expr.attr}" if head else None
    return None


def module_constants(tree: ast.Module) -> dict[str, ast.expr]:
    """Names assigned exactly once at module level: the only names we dare to follow."""
    seen: dict[str, list[ast.expr]] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target, value = stmt.targets[0], stmt.value
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            target, value = stmt.target, stmt.value
        else:
            continue
        if isinstance(target, ast.Name):
            seen.setdefault(target.id, []).append(value)
    # Rebinding anywhere else (a loop, a function body) makes the value a guess: drop it.
    top = {id(t) for t in _top_level_targets(tree)}
    for node in ast.walk(tree):
        if (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)
                and node.id in seen and id(node) not in top):
            seen[node.id].append(node)
    return {name: values[0] for name, values in seen.items() if len(values) == 1}


def _top_level_targets(tree: ast.Module) -> list[ast.expr]:
    targets: list[ast.expr] = []
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign):
            targets.extend(stmt.targets)
        elif isinstance(stmt, ast.AnnAssign):
            targets.append(stmt.target)
    return targets


def module_imports(tree: ast.Module, module: str, is_package: bool) -> dict[str, str]:
    """Local name → what it stands for, as a dotted path (`nodes` → `app.nodes`)."""
    package = module.split(".") if is_package else module.split(".")[:-1]
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    names[alias.asname] = alias.name
                else:
                    head = alias.name.split(".")[0]
                    names[head] = head
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                keep = len(package) - (node.level - 1)
                base = ".".join([*package[:max(keep, 0)], *([base] if base else [])])
            for alias in node.names:
                if alias.name != "*":
                    names[alias.asname or alias.name] = f"{base}.{alias.name}".lstrip(".")
    return names


def _call_name(call: ast.Call) -> str | None:
    func = call.func
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return None


class _GraphReader:
    def __init__(self, source: SourceModule, tree: ast.Module, rel: str) -> None:
        self.source = source
        self.tree = tree
        self.rel = rel
        self.module = module_name(rel)
        self.constants = module_constants(tree)
        self.contracts = ContractReader(source, rel, self.resolve)
        self.diagnostics: list[Diagnostic] = []
        self.nodes: dict[str, GraphNode] = {}
        self.edges: list[GraphEdge] = []
        self.opaque_ids = False  # a node id we could not read: unknown-node errors soften

    def resolve(self, expr: ast.expr) -> ast.expr:
        for _ in range(MAX_NAME_HOPS):
            if isinstance(expr, ast.Name) and expr.id in self.constants:
                expr = self.constants[expr.id]
            else:
                break
        return expr

    def report(self, at: ast.expr | Span, code: str, message: str,
               severity: Severity = "error") -> None:
        span = at if isinstance(at, Span) else self.source.span(at)
        self.diagnostics.append(Diagnostic(code, message, self.rel, span.line, span.column,
                                           severity))

    def read(self) -> GraphModel:
        calls = [n for n in ast.walk(self.tree)
                 if isinstance(n, ast.Call) and _call_name(n) in GRAPH_CALLS]
        calls.sort(key=lambda c: (c.lineno, c.col_offset))
        for call in calls:
            if _call_name(call) == "add_node":
                self.add_node(call)
            else:
                self.add_edge(call)
        self.check_edges()
        is_package = self.rel.endswith("__init__.py")
        return GraphModel(self.rel, self.module, self.nodes, tuple(self.edges),
                          module_imports(self.tree, self.module, is_package),
                          tuple(self.diagnostics + self.contracts.diagnostics))

    def _args(self, call: ast.Call, *names: str) -> list[ast.expr | None]:
        keywords = {k.arg: k.value for k in call.keywords if k.arg}
        found: list[ast.expr | None] = []
        for index, name in enumerate(names):
            found.append(call.args[index] if index < len(call.args) else keywords.get(name))
        return found

    def add_node(self, call: ast.Call) -> None:
        id_expr, func_expr, contracts_expr = self._args(call, "node", "func", "input_contracts")
        node_id = self.literal_str(id_expr)
        if node_id is None:
            self.opaque_ids = True
            self.report(id_expr or call, "node_id_not_literal",
                        "add_node: the node id must be a string literal", "warning")
            return
        if node_id in self.nodes:
            self.report(call, "duplicate_node", f"node {node_id!r} is added twice "
                        f"(first at line {self.nodes[node_id].span.line})")
            return
        if func_expr is None:
            self.report(call, "node_without_function", f"node {node_id!r} has no function")
            return
        func = FuncRef(dotted_name(func_expr), self.source.span(func_expr),
                       is_lambda=isinstance(func_expr, ast.Lambda))
        contracts = (self.contracts.read_list(contracts_expr, node_id)
                     if contracts_expr is not None else [])
        self.nodes[node_id] = GraphNode(node_id, func, tuple(contracts), self.source.span(call))

    def add_edge(self, call: ast.Call) -> None:
        source_expr, target_expr = self._args(call, "start_key", "end_key")
        ends = [self.endpoint(e) for e in (source_expr, target_expr)]
        if ends[0] is None or ends[1] is None:
            self.report(call, "edge_not_literal",
                        "add_edge: both ends must be START, END or a node id string literal",
                        "warning")
            return
        self.edges.append(GraphEdge(ends[0], ends[1], self.source.span(call)))

    def literal_str(self, expr: ast.expr | None) -> str | None:
        return literal_str(expr, self.resolve)

    def endpoint(self, expr: ast.expr | None) -> str | None:
        if expr is None:
            return None
        value = self.resolve(expr)
        name = dotted_name(value)
        if name is not None and name.split(".")[-1] in ("START", "END"):
            return START if name.endswith("START") else END
        return self.literal_str(value)

    def check_edges(self) -> None:
        severity: Severity = "warning" if self.opaque_ids else "error"
        for edge in self.edges:
            if edge.target == START or edge.source == END:
                self.report(edge.span, "invalid_edge",
                            "an edge cannot lead into START or out of END")
            for end in (edge.source, edge.target):
                if end not in (START, END) and end not in self.nodes:
                    self.report(edge.span, "unknown_node",
                                f"edge uses unknown node {end!r} "
                                f"(nodes: {', '.join(sorted(self.nodes)) or 'none'})", severity)
        if self.nodes and not any(e.source == START for e in self.edges):
            self.report(Span(1, 1, 1, 1), "no_start_node",
                        "no add_edge(START, ...): the Flow has no node to send input to",
                        "warning")


def build_graph(source: SourceModule, rel: str) -> GraphModel:
    """The graph a parsed module declares; a syntax error gives an empty model + diagnostic."""
    if source.tree is None:
        assert source.error is not None
        return GraphModel(rel, module_name(rel), diagnostics=(source.error,))
    return _GraphReader(source, source.tree, rel).read()
