"""What introspection finds in a project's source: leaf types, no I/O, no imports of the package.

Positions are 1-based lines and 1-based *character* columns (as editors and compiler messages
count), not the 0-based UTF-8 byte offsets that `ast` reports.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Severity = Literal["error", "warning", "info"]

# The field types a DataContract may declare (docs/project-format.md).
FIELD_TYPES = ("string", "number", "integer", "boolean", "object", "array")

# Diagnostics after which a graph model is empty: the file was not read or did not parse.
UNREADABLE = frozenset({"graph_missing", "graph_unreadable", "graph_outside_project",
                        "syntax_error"})

# Edge endpoints that are not nodes.
START = "__start__"
END = "__end__"


@dataclass(frozen=True)
class Diagnostic:
    """One problem found in the project's source, with where it is."""

    code: str
    message: str
    file: str
    line: int | None = None
    column: int | None = None
    severity: Severity = "error"

    def location(self) -> dict[str, Any]:
        """Everything but the message: fits `RunFailure(reason, message, **location)`."""
        return {"code": self.code, "file": self.file, "line": self.line,
                "column": self.column, "severity": self.severity}

    def as_dict(self) -> dict[str, Any]:
        """The diagnostic as the API answers it: its message and where."""
        return {"message": self.message, **self.location()}


@dataclass(frozen=True)
class Span:
    """A place in a source file, counted the way editors count (1-based lines and characters)."""

    line: int
    column: int
    end_line: int
    end_column: int

    def as_dict(self) -> dict[str, int]:
        return {"line": self.line, "column": self.column, "end_line": self.end_line,
                "end_column": self.end_column}


@dataclass(frozen=True)
class ContractField:
    """One field of a DataContract as declared in the source (its type is the source text)."""

    name: str
    type: str
    required: bool = False
    description: str | None = None


@dataclass(frozen=True)
class Contract:
    """A `DataContract(name=..., schema=..., fields={...})` read from the graph module."""

    name: str
    schema: str | None
    fields: tuple[ContractField, ...]
    span: Span


@dataclass(frozen=True)
class FuncRef:
    """A node's function as written in the graph module.

    `dotted` is the name as written (`nodes.approve`, `approve`); None when the function is
    an expression (a lambda, a call) with no name to follow, in which case `span` is all
    there is.
    """

    dotted: str | None
    span: Span
    is_lambda: bool = False


@dataclass(frozen=True)
class GraphNode:
    """A node of the graph and the function it runs, where the graph module declares it."""

    id: str
    func: FuncRef
    contracts: tuple[Contract, ...]
    span: Span


@dataclass(frozen=True)
class GraphEdge:
    """An edge between two node ids, where the graph module declares it."""

    source: str
    target: str
    span: Span


@dataclass(frozen=True)
class GraphModel:
    """A Flow's graph as its module declares it, at one (mtime, size) of the file."""

    file: str  # relative to the project, POSIX separators
    module: str  # dotted module name of the graph file ("app.graph")
    nodes: dict[str, GraphNode] = field(default_factory=dict)
    edges: tuple[GraphEdge, ...] = ()
    imports: dict[str, str] = field(default_factory=dict)  # local name -> dotted target
    diagnostics: tuple[Diagnostic, ...] = ()

    @property
    def parsed(self) -> bool:
        """False when the file could not be read or parsed: nothing else is known."""
        return not any(d.code in UNREADABLE for d in self.diagnostics)

    def start_nodes(self) -> list[str]:
        """Nodes connected directly from START, in the order of their edges."""
        seen: list[str] = []
        for edge in self.edges:
            if edge.source == START and edge.target in self.nodes and edge.target not in seen:
                seen.append(edge.target)
        return seen
