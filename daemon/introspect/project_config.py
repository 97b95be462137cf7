"""Reads `[tool.llamon]` from a project's pyproject.toml (text only; never imports the project)."""

from __future__ import annotations

import shlex
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from llamon_playground.daemon.errors import ProjectError
from llamon_playground.daemon.introspect.file_cache import FileCache

DEFAULT_HOST_COMMAND = ("uv", "run", "llamon", "run", ".")
KINDS = ("agent", "flow", "orchestrator")


@dataclass(frozen=True)
class ProjectConfig:
    """A project's `[tool.llamon]` table with its defaults filled in; `raw` keeps the table as
    written, for what this model does not name."""

    kind: str = "agent"
    host_command: tuple[str, ...] = DEFAULT_HOST_COMMAND
    env_file: str = ".env"
    graph: str = "app/graph.py"
    state_backend: str | None = None
    memory_backend: str | None = None
    warm_start: bool = True  # fork generations from a warm parent (docs/host.md)
    preload: tuple[str, ...] = ()  # third-party modules the warm parent imports up front
    raw: dict[str, object] = field(default_factory=dict, compare=False)

    def resolved_host_command(self) -> list[str]:
        """`{python}` stands for the daemon's interpreter, so examples run without uv."""
        return [sys.executable if part == "{python}" else part for part in self.host_command]

    def recommended_run_command(self) -> str:
        """The shell line a person runs to serve the project without the Playground."""
        return shlex.join("python" if part == "{python}" else part for part in self.host_command)


def load_project_config(project_dir: Path) -> ProjectConfig:
    """The project's `[tool.llamon]`, read again only when pyproject.toml changed (every run
    asks; a stat is all an unchanged file costs)."""
    path = project_dir / "pyproject.toml"
    try:
        return _CONFIGS.get(path)
    except FileNotFoundError as exc:
        raise ProjectError(f"{path} does not exist") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise ProjectError(f"{path}: {exc}") from exc


def _parse(path: Path, text: str) -> ProjectConfig:
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ProjectError(f"{path}: {exc}") from exc
    table = doc.get("tool", {}).get("llamon", {})
    if not isinstance(table, dict):
        raise ProjectError("[tool.llamon] must be a table")
    kind = table.get("kind", "agent")
    if kind not in KINDS:
        raise ProjectError(f"[tool.llamon].kind must be one of {', '.join(KINDS)}, not {kind!r}")
    command = table.get("host_command", list(DEFAULT_HOST_COMMAND))
    if isinstance(command, str):
        command = shlex.split(command)
    if not (isinstance(command, list) and command and all(isinstance(c, str) for c in command)):
        raise ProjectError("[tool.llamon].host_command must be a non-empty list of strings")
    env_file = table.get("env_file", ".env")
    graph = table.get("graph", "app/graph.py")
    if not isinstance(env_file, str) or not isinstance(graph, str):
        raise ProjectError("[tool.llamon].env_file and .graph must be strings")
    warm_start = table.get("warm_start", True)
    if not isinstance(warm_start, bool):
        raise ProjectError("[tool.llamon].warm_start must be true or false")
    preload = table.get("preload", [])
    if not (isinstance(preload, list) and all(isinstance(m, str) for m in preload)):
        raise ProjectError("[tool.llamon].preload must be a list of module names")
    state = table.get("state_backend")
    memory = table.get("memory_backend")
    return ProjectConfig(kind=kind, host_command=tuple(command), env_file=env_file, graph=graph,
                         state_backend=state if isinstance(state, str) else None,
                         memory_backend=memory if isinstance(memory, str) else None,
                         warm_start=warm_start, preload=tuple(preload),
                         raw=dict(table))


_CONFIGS: FileCache[ProjectConfig] = FileCache(_parse)


def backend_warnings(config: ProjectConfig) -> list[dict[str, str]]:
    """A PostgreSQL backend is flagged from the start; nothing falls back to SQLite."""
    warnings = []
    for key, value in (("state_backend", config.state_backend),
                       ("memory_backend", config.memory_backend)):
        if value and value.lower() in ("postgresql", "postgres"):
            warnings.append({
                "code": "postgresql_backend",
                "message": f"[tool.llamon].{key} is PostgreSQL: the Host needs that database "
                           "reachable; the Playground never falls back to SQLite or resets it"})
    return warnings
