"""Which Host commands can be forked warm, and the `[tool.llamon]` keys that steer it."""

from __future__ import annotations

from pathlib import Path

import pytest

from llamon_playground.daemon.errors import ProjectError
from llamon_playground.daemon.introspect.project_config import load_project_config
from llamon_playground.host_manager.spawn.spawner import entry_point


@pytest.mark.parametrize(("argv", "kind", "target", "args"), [
    (["/venv/bin/python", "-m", "app.host", "--x"], "module", "app.host", ("--x",)),
    (["python3.12", "serve.py", "a"], "script", "/p/serve.py", ("a",)),
    (["pypy3", "-m", "srv"], "module", "srv", ()),
])
def test_python_entry_points_are_recognised(argv: list[str], kind: str, target: str,
                                            args: tuple[str, ...]) -> None:
    entry = entry_point(argv, Path("/p"))
    assert entry is not None
    assert (entry.kind, entry.target, entry.args) == (kind, target, args)


@pytest.mark.parametrize("argv", [
    ["uv", "run", "llamon", "run", "."], ["python"], ["python", "-u", "serve.py"],
    ["python", "-X", "dev", "-m", "app"], ["node", "serve.js"], ["python", "-m"],
])
def test_other_commands_are_started_cold(argv: list[str]) -> None:
    assert entry_point(argv, Path("/p")) is None


def write(tmp_path: Path, table: str) -> Path:
    (tmp_path / "pyproject.toml").write_text(f"[tool.llamon]\n{table}\n")
    return tmp_path


def test_warm_start_and_preload_are_read(tmp_path: Path) -> None:
    config = load_project_config(write(tmp_path, 'warm_start = false\npreload = ["a", "b.c"]'))
    assert (config.warm_start, config.preload) == (False, ("a", "b.c"))
    default = load_project_config(write(tmp_path, ""))
    assert (default.warm_start, default.preload) == (True, ())


@pytest.mark.parametrize(("table", "key"), [
    ('warm_start = "no"', "warm_start"), ('preload = "a"', "preload"),
    ("preload = [1]", "preload")])
def test_bad_warm_keys_are_refused_by_name(tmp_path: Path, table: str, key: str) -> None:
    with pytest.raises(ProjectError, match=key):
        load_project_config(write(tmp_path, table))
