"""Small projects for tests: one whose Host is a misbehaving child script."""

from __future__ import annotations

import json
import sys
from pathlib import Path

CHILD = Path(__file__).resolve().parents[1] / "children" / "tiny_host.py"


def tiny_project(root: Path, mode: str, extra: str = "") -> Path:
    project = root / f"tiny_{mode}"
    (project / "app").mkdir(parents=True)
    command = json.dumps([sys.executable, str(CHILD), mode])
    (project / "pyproject.toml").write_text(
        f'[project]\nname = "tiny"\nversion = "0"\n\n[tool.llamon]\nkind = "agent"\n'
        f"host_command = {command}\n{extra}")
    (project / "app" / "__init__.py").write_text("# watched\n")
    return project
