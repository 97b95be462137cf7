"""What the CLI prints of a Host's output and of a missing module."""

from __future__ import annotations

from pathlib import Path

from llamon_playground.cli.terminal.show import visible
from llamon_playground.host_manager.missing_module import install_command, missing_module


def test_control_characters_are_shown_not_obeyed() -> None:
    line = "\x1b[31mred\x1b[0m 50%\rdone\x07\ttab\x7f\x9b"
    shown = visible(line)
    assert shown == "␛[31mred␛[0m 50%␍done␇\ttab␡\\x9b"
    assert not any((ord(c) < 0x20 and c != "\t") or 0x7F <= ord(c) < 0xA0 for c in shown)
    assert visible("plain ünïcode ✓") == "plain ünïcode ✓"


def test_a_missing_module_is_named_with_the_projects_requirement(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\ndependencies = ["a2a-sdk[http-server]>=1.3,<2", '
        '"uvicorn>=0.30; python_version >= \'3.11\'"]\n')
    tail = ["[stderr] Traceback (most recent call last):",
            "[stderr] ModuleNotFoundError: No module named 'a2a.server'"]
    assert missing_module(tail) == "a2a"
    assert missing_module(["[stdout] all fine"]) is None
    python = ["/venv/bin/python3", "-m", "app.host"]
    assert install_command("a2a", python, tmp_path) == \
        "/venv/bin/python3 -m pip install 'a2a-sdk[http-server]>=1.3,<2'"
    assert install_command("uvicorn", python, tmp_path) == \
        "/venv/bin/python3 -m pip install 'uvicorn>=0.30'"
    assert install_command("yaml", ["uv", "run", "app"], tmp_path) == "pip install yaml"
