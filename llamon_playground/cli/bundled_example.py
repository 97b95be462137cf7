"""Where `llamon-playground up` finds the bundled example when no project is named.

In a source checkout (or an editable install) the example is served in place, from the
repository's `examples/echo_agent`. From an installed wheel it is package data inside
site-packages, where history must not be written: it is copied once to
`$XDG_DATA_HOME/llamon-playground/examples/echo_agent` (default `~/.local/share/...`) and
served from there. Files the wheel ships are refreshed when they differ; anything else in
the copy (its `.llamon/` history) is left alone.
"""

from __future__ import annotations

import os
import sysconfig
from collections.abc import Mapping
from importlib import resources
from pathlib import Path

EXAMPLE = "echo_agent"


def shipped_example() -> Path:
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
