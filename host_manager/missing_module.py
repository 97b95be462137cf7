"""A Host that cannot start because a module is missing: which module, and the command that
installs it, said where the failure is read (the run's error, GET /host, the page, the CLI).

The module is read from the Host's own last words (`ModuleNotFoundError: No module named
'x'`). The command installs the project's own requirement for it when its pyproject names
one (so `a2a` becomes `a2a-sdk[http-server]>=1.3,<2`), else the module's name, into the
interpreter the Host runs on when its command starts with a Python.
"""

from __future__ import annotations

import re
import shlex
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from llamon_playground.host_manager.errors import HostUnavailable

CODE = "host_module_missing"
_MISSING = re.compile(r"ModuleNotFoundError: No module named '([^']+)'")
_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def missing_module(lines: list[str]) -> str | None:
    """The top-level module of the last ModuleNotFoundError in `lines`."""
    found = None
    for line in lines:
        match = _MISSING.search(line)
        if match:
            found = match.group(1).split(".")[0]
    return found


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_for(module: str, project_dir: Path) -> str:
    """The project's dependency that provides `module` (by name), else the module's name."""
    try:
        doc = tomllib.loads((project_dir / "pyproject.toml").read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        return module
    deps = doc.get("project", {}).get("dependencies", [])
    want = _normal(module)
    for dep in deps if isinstance(deps, list) else []:
        match = _NAME.match(dep) if isinstance(dep, str) else None
        if match is None:
            continue
        name = _normal(match.group(1))
        if name == want or name.split("-")[0] == want:
            return str(dep).split(";")[0].strip()
    return module


def install_command(module: str, argv: list[str], project_dir: Path) -> str:
    requirement = requirement_for(module, project_dir)
    first = Path(argv[0]).name if argv else ""
    pip = [argv[0], "-m", "pip"] if first.startswith("python") else ["pip"]
    return shlex.join([*pip, "install", requirement])


def explain(exc: HostUnavailable, host_command: Callable[[], list[str]],
            project_dir: Path) -> list[dict[str, Any]]:
    """When the Host's output names a missing module: append it and the command to the
    failure's message, and answer the warning GET /host shows until a generation is Ready.
    `host_command` is read only then (it parses pyproject.toml, which may be what failed)."""
    module = missing_module(exc.log_tail)
    if module is None:
        return []
    try:
        argv = host_command()
    except HostUnavailable:
        argv = []
    command = install_command(module, argv, project_dir)
    said = f"the Host cannot import the module {module!r}: install it with `{command}`"
    exc.message = f"{exc.message}: {said}"
    exc.args = (exc.message,)
    return [{"code": CODE, "message": said, "fix": command, "module": module}]
