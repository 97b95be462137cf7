"""The fingerprinter never reads outside the project, nor anything but a regular file."""

from __future__ import annotations

import os
from pathlib import Path

from llamon_playground.host_manager.watch.fingerprint import Fingerprinter, WatchRules


def test_links_out_and_fifos_are_never_hashed(tmp_path: Path) -> None:
    project, outside = tmp_path / "project", tmp_path / "outside"
    (project / "app").mkdir(parents=True)
    outside.mkdir()
    (outside / "good.py").write_text("secret = 1\n")
    (project / "app" / "agent.py").write_text("x = 1\n")
    (project / "app" / "alias.py").symlink_to(project / "app" / "agent.py")
    (project / "app" / "passwd.py").symlink_to("/etc/passwd")
    (project / "app" / "out.py").symlink_to(outside / "good.py")
    (project / "link").symlink_to(outside)
    os.mkfifo(project / "app" / "pipe.py")  # reading it would block the scan for ever
    printer = Fingerprinter(WatchRules(project))
    assert set(printer.scan()) == {"app/agent.py", "app/alias.py"}
    for rel in ("app/passwd.py", "app/out.py", "link/good.py", "app/pipe.py"):
        assert printer.hash_file(rel) is None, rel
    assert printer.hash_file("app/alias.py") == printer.hash_file("app/agent.py")


def test_the_watcher_ignores_changes_behind_a_link_out(tmp_path: Path) -> None:
    project, outside = tmp_path / "project", tmp_path / "outside"
    (project / "app").mkdir(parents=True)
    outside.mkdir()
    (outside / "good.py").write_text("x = 1\n")
    (project / "link").symlink_to(outside)
    (project / "app" / "out.py").symlink_to(outside / "good.py")
    rules = WatchRules(project.resolve())
    assert rules.accepts(str(project / "app" / "agent.py"))
    assert not rules.accepts(str(project / "link" / "good.py"))
    assert not rules.accepts(str(project / "app" / "out.py"))
