"""What can be told about a project's Host command before starting it, in words that name
the cause and the fix: a missing `[tool.llamon]` table, an executable that is not there."""

from __future__ import annotations

import os
import shlex
import shutil
from collections.abc import Mapping
from pathlib import Path

from llamon_playground.daemon.errors import ProjectError
from llamon_playground.daemon.introspect.project_config import (
    DEFAULT_HOST_COMMAND,
    ProjectConfig,
    backend_warnings,
    load_project_config,
)

FIX = ("set [tool.llamon].host_command in pyproject.toml to the command that serves the "
       "project as an A2A server on 127.0.0.1:$LLAMON_HOST_PORT, e.g. "
       'host_command = ["python", "-m", "app.host"]')


def missing_executable(argv: list[str], project_dir: Path,
                       environ: Mapping[str, str] | None = None) -> str | None:
    """Why `argv[0]` cannot be started (None when it can), naming host_command and its fix."""
    exe = argv[0]
    if "/" in exe:
        path = Path(exe) if os.path.isabs(exe) else project_dir / exe
        found = path.is_file() and os.access(path, os.X_OK)
    else:
        env = environ if environ is not None else os.environ
        found = shutil.which(exe, path=env.get("PATH", os.defpath)) is not None
    if found:
        return None
    return (f"the Host command's executable {exe!r} was not found "
            f"({'no such executable file' if '/' in exe else 'not on PATH'}); the Host "
            f"command is `{shlex.join(argv)}`: install {exe!r}, or {FIX}")


def default_command_note(config: ProjectConfig, project_dir: Path) -> str | None:
    """A project with no [tool.llamon] table runs the default command: say so."""
    if config.raw:
        return None
    return (f"{project_dir / 'pyproject.toml'} has no [tool.llamon] table, so the Host is "
            f"started with the default command `{shlex.join(DEFAULT_HOST_COMMAND)}`; if that "
            f"is not how this project is served, {FIX}")


def project_warnings(config: ProjectConfig, project_dir: Path) -> list[dict[str, str]]:
    """The Host's standing warnings (GET /host, each run's validate diagnostics)."""
    warnings = backend_warnings(config)
    note = default_command_note(config, project_dir)
    if note is not None:
        warnings.append({"code": "default_host_command", "message": note})
    return warnings


def host_command_warnings(project_dir: Path,
                          environ: Mapping[str, str] | None = None) -> list[str]:
    """Everything visible before the first start (for `up` to say at once): the standing
    warnings `status` and `GET /host` show (a PostgreSQL backend, the default command), then
    an executable that is not there."""
    try:
        config = load_project_config(project_dir)
    except ProjectError as exc:
        return [f"the project cannot be read: {exc}"]
    found = [w["message"] for w in project_warnings(config, project_dir)]
    found.append(missing_executable(config.resolved_host_command(), project_dir, environ) or "")
    return [w for w in found if w]
