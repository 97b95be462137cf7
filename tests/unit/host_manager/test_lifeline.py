"""The reaper's lifeline: EOF means the daemon is gone; a stand-down means it stopped its
Host itself. (The whole flow, a SIGKILLed daemon's tree ending, is in
tests/e2e/test_host_supervision.py.)"""

from __future__ import annotations

import os
from pathlib import Path

import psutil
import pytest

from llamon_playground.harness.waiting import wait_for
from llamon_playground.host_manager.lifeline import (
    LIFELINE_MODULE,
    STAND_DOWN,
    Lifeline,
    watch,
)


def test_eof_on_the_lifeline_means_the_daemon_died() -> None:
    read_fd, write_fd = os.pipe()
    os.write(write_fd, b"noise\n")
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as lifeline:
        assert watch(lifeline) is True


def test_a_stand_down_lets_the_reaper_go_without_reaping() -> None:
    read_fd, write_fd = os.pipe()
    os.write(write_fd, STAND_DOWN)
    with os.fdopen(read_fd, "rb") as lifeline:
        assert watch(lifeline) is False
    os.close(write_fd)


@pytest.mark.skipif(not Path("/proc/self/wchan").exists(),
                    reason="where a process waits in the kernel is read from /proc (Linux)")
def test_the_waiting_reaper_is_no_python(tmp_path: Path,
                                         capfd: pytest.CaptureFixture[str]) -> None:
    """A reaper waits as long as its daemon lives: it waits as a shell, and Python (with
    psutil and what ending the tree takes) starts only once the daemon is gone."""
    lifeline = Lifeline.start(tmp_path / "host.json", dict(os.environ))
    pid = lifeline.process.pid
    try:
        # Blocked reading its pipe (stdin): the shell is at its `read`.
        wait_for(lambda: "pipe_read" in Path(f"/proc/{pid}/wchan").read_text(), 10,
                 "the reaper to wait on its pipe")
        mapped = {m.path for m in psutil.Process(pid).memory_maps()}
        assert not [path for path in mapped if "python" in path.lower()], mapped
        assert LIFELINE_MODULE in " ".join(psutil.Process(pid).cmdline())
    finally:
        lifeline.close()  # EOF: the shell execs the Python reaper, which reaps and exits
        assert lifeline.process.wait(10) == 0
    # The Python reaper ran in the shell's place and said what it ended (nothing here).
    assert "the daemon died; ended 0 process(es)" in capfd.readouterr().err


def test_a_stood_down_reaper_exits_without_starting_python(
        tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    lifeline = Lifeline.start(tmp_path / "host.json", dict(os.environ))
    lifeline.stand_down()
    assert lifeline.process.wait(10) == 0
    assert "daemon died" not in capfd.readouterr().err
