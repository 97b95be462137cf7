"""The project's Python source as the daemon reads it: parsed files cached by (mtime, size).

One `ProjectSource` lives as long as the daemon's app; `validate_graph` also works without
one (the run executor's validate phase parses afresh).
"""

from __future__ import annotations

from pathlib import Path

from llamon_playground.daemon.introspect.file_cache import FileCache
from llamon_playground.daemon.introspect.graph_ast import build_graph, module_name
from llamon_playground.daemon.introspect.model import Diagnostic, GraphModel
from llamon_playground.daemon.introspect.project_config import ProjectConfig
from llamon_playground.daemon.introspect.source_module import SourceModule, parse_source, relative


def graph_file(config: ProjectConfig) -> str:
    """`[tool.llamon].graph` as a relative file path (a dotted module name is accepted too)."""
    graph = config.graph.strip()
    if not graph.endswith(".py") and "/" not in graph:
        graph = graph.replace(".", "/") + ".py"
    return graph


class ProjectSource:
    """A project's source files and graph modules, each parsed once per (mtime, size), and the
    guard that keeps a relative path inside the project."""

    def __init__(self, project_dir: Path) -> None:
        self.project_dir = project_dir.resolve()
        self.modules: FileCache[SourceModule] = FileCache(
            lambda path, text: parse_source(self.rel(path), text))
        self.graphs: FileCache[GraphModel] = FileCache(
            lambda path, text: build_graph(parse_source(self.rel(path), text), self.rel(path)))

    def rel(self, path: Path) -> str:
        """`path` relative to the project folder, as the API names files."""
        return relative(self.project_dir, path)

    def inside(self, rel: str) -> Path | None:
        """The file `rel` names, or None when it would leave the project (`..`, symlinks)."""
        path = (self.project_dir / rel).resolve()
        return path if path.is_relative_to(self.project_dir) else None

    def graph(self, config: ProjectConfig) -> GraphModel:
        """The Flow's graph as the file is now; problems come back as diagnostics."""
        rel = graph_file(config)
        path = self.inside(rel)
        if path is None:
            return _broken(rel, "graph_outside_project",
                           f"[tool.llamon].graph {config.graph!r} is outside the project")
        try:
            return self.graphs.get(path)
        except FileNotFoundError:
            return _broken(rel, "graph_missing",
                           f"the graph module {rel} does not exist ([tool.llamon].graph)")
        except (OSError, UnicodeDecodeError) as exc:
            return _broken(rel, "graph_unreadable", f"cannot read {rel}: {exc}")

    def module(self, path: Path) -> SourceModule:
        """A parsed module; raises OSError / UnicodeDecodeError as reading would."""
        return self.modules.get(path)


def _broken(rel: str, code: str, message: str) -> GraphModel:
    return GraphModel(rel, module_name(rel), diagnostics=(Diagnostic(code, message, rel),))


def validate_graph(project_dir: Path, config: ProjectConfig,
                   source: ProjectSource | None = None) -> list[Diagnostic]:
    """Diagnostics of a Flow's graph for the run's `validate` phase ([] for other kinds).

    A run should fail (`project_validation`) on any diagnostic whose severity is "error":
    missing or unreadable graph, syntax error, an edge to an unknown node, a node added
    twice. "warning"s (a contract that is not a literal...) only limit the composer.
    Synchronous and file-reading: call it with `asyncio.to_thread`.
    """
    if config.kind != "flow":
        return []
    return list((source or ProjectSource(project_dir)).graph(config).diagnostics)
