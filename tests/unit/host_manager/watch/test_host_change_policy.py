"""Should a file change restart the Host? Real files, no Host process."""

from __future__ import annotations

from pathlib import Path

import pytest

from llamon_playground.host_manager.state import HostState
from llamon_playground.host_manager.watch.change_policy import ChangePolicy, restart_wanted
from llamon_playground.host_manager.watch.fingerprint import WatchRules


@pytest.mark.parametrize(("state", "changed", "wanted"), [
    (HostState.READY, {"app.py"}, True),
    (HostState.BACKOFF, {"app.py"}, True),
    (HostState.CRASHLOOP, set(), True),  # any edit is worth another try
    (HostState.READY, set(), False),
    (HostState.BACKOFF, set(), False),
    (HostState.STOPPED, {"app.py"}, False),  # nothing runs: the next start picks it up
    (HostState.STARTING, {"app.py"}, False),
    (HostState.STOPPING, {"app.py"}, False),
])
def test_restart_wanted(state: HostState, changed: set[str], wanted: bool) -> None:
    assert restart_wanted(state, changed) is wanted


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "app.py").write_text("x = 1\n")
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "notes.txt").write_text("not watched\n")
    return tmp_path


async def test_the_same_bytes_saved_again_are_no_change(project: Path) -> None:
    policy = ChangePolicy(WatchRules(project))
    started = await policy.fingerprint()
    assert set(started) == {"app.py", "pyproject.toml"}
    (project / "app.py").write_text("x = 1\n")
    assert await policy.saved_changes(["app.py"], started) == []
    assert await policy.changed_since(started) == set()


async def test_only_watched_files_that_differ_count(project: Path) -> None:
    policy = ChangePolicy(WatchRules(project))
    started = await policy.fingerprint()
    (project / "app.py").write_text("x = 22\n")
    (project / "notes.txt").write_text("changed but not watched\n")
    (project / "new.py").write_text("y = 2\n")
    (project / "pyproject.toml").unlink()
    saved = ["app.py", "notes.txt", "new.py", "pyproject.toml"]
    assert await policy.saved_changes(saved, started) == ["app.py", "new.py", "pyproject.toml"]
    assert await policy.changed_since(started) == {"app.py", "new.py", "pyproject.toml"}
    assert policy.digest("pyproject.toml") is None
