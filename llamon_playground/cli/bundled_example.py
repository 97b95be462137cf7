"""Where `llamon-playground up` finds the bundled example when no project is named.

In a source checkout (or an editable install) the example is served in place, from the
repository's `examples/echo_agent`. From an installed wheel it is package data inside
site-packages, where history must not be written: it is copied once to
`$XDG_DATA_HOME/llamon-playground/examples/echo_agent` (default `~/.local/share/...`) and
served from there. Files the wheel ships are refreshed when they differ; anything else in
the copy (its `.llamon/` history) is left alone.
"""

from __future__ import annotations

import importlib.util
import os
import sysconfig
from collections.abc import Mapping
from importlib import resources
from pathlib import Path

EXAMPLE = "echo_agent"
PROJECT_HELP = ("the project folder (default: the current folder when it is a llamon "
                "project, else the bundled example)")
# What the example's Host imports that the Playground itself does not: the `examples` extra
# of pyproject.toml installs them (their import names, not their distributions').
EXAMPLE_MODULES = ("a2a", "starlette", "uvicorn")
EXTRA_INSTALL = "pip install 'llamon-playground[examples]'"


def shipped_example() -> Path:
    """Where the example project shipped in the package lies (served when `up` is given no
    project)."""
    return Path(str(resources.files("llamon_playground.examples"))) / EXAMPLE


def _inside_site_packages(path: Path) -> bool:
    paths = sysconfig.get_paths()
    return any(path.is_relative_to(Path(paths[key]).resolve()) for key in ("purelib", "platlib"))


def data_home(environ: Mapping[str, str]) -> Path:
    xdg = environ.get("XDG_DATA_HOME")
    return Path(xdg) if xdg else Path(environ.get("HOME", str(Path.home()))) / ".local" / "share"


def bundled_example(environ: Mapping[str, str] = os.environ) -> Path:
    shipped = shipped_example().resolve()
    if not _inside_site_packages(shipped):
        return shipped
    target = data_home(environ) / "llamon-playground" / "examples" / EXAMPLE
    for source in sorted(shipped.rglob("*")):
        if not source.is_file() or "__pycache__" in source.parts:
            continue
        dest = target / source.relative_to(shipped)
        data = source.read_bytes()
        if dest.is_file() and dest.read_bytes() == data:
            continue
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_name(dest.name + ".tmp")
        tmp.write_bytes(data)
        tmp.replace(dest)
    return target


def is_bundled_example(project_dir: Path) -> bool:
    """The bundled example, or a copy of it (its pyproject.toml unchanged)."""
    try:
        return (project_dir / "pyproject.toml").read_bytes() == \
            (shipped_example() / "pyproject.toml").read_bytes()
    except OSError:
        return False


def _importable(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def missing_extra(project_dir: Path) -> str | None:
    """For the bundled example on an interpreter without the `examples` extra: every
    missing module and the one command that installs them all (the Host runs on this
    interpreter, `{python}`), said before any run fails on the first of them."""
    if not is_bundled_example(project_dir):
        return None
    missing = [name for name in EXAMPLE_MODULES if not _importable(name)]
    if not missing:
        return None
    return (f"the bundled example's Host needs the `examples` extra, and this Python "
            f"lacks {', '.join(repr(m) for m in missing)}: install it with `{EXTRA_INSTALL}`")
