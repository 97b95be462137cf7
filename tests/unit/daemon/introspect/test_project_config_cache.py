"""pyproject.toml is parsed again only when it changed: every run reads the project's
config, and an unchanged file costs a stat, not a read and a TOML parse."""

from __future__ import annotations

from pathlib import Path

import pytest

from llamon_playground.daemon.errors import ProjectError
from llamon_playground.daemon.introspect import project_config
from llamon_playground.daemon.introspect.project_config import load_project_config


def test_an_unchanged_pyproject_is_parsed_once_and_an_edit_is_seen(tmp_path: Path) -> None:
    path = tmp_path / "pyproject.toml"
    path.write_text('[tool.llamon]\nkind = "agent"\n')
    builds = project_config._CONFIGS.builds
    first = load_project_config(tmp_path)
    assert load_project_config(tmp_path) is first
    assert project_config._CONFIGS.builds == builds + 1
    path.write_text('[tool.llamon]\nkind = "flow"\ngraph = "g.py"\n')
    assert load_project_config(tmp_path).kind == "flow"
    path.write_text("[tool.llamon\n")  # broken: refused, and not kept
    with pytest.raises(ProjectError):
        load_project_config(tmp_path)
    path.write_text('[tool.llamon]\nkind = "orchestrator"\n')
    assert load_project_config(tmp_path).kind == "orchestrator"
    path.unlink()
    with pytest.raises(ProjectError, match="does not exist"):
        load_project_config(tmp_path)
