"""The reaper's lifeline: EOF means the daemon is gone; a stand-down means it stopped its
Host itself. (The whole flow, a SIGKILLed daemon's tree ending, is in
tests/e2e/test_host_supervision.py.)"""

from __future__ import annotations

import os
from pathlib import Path

import psutil
import pytest

from llamon_playground.harness.waiting import wait_for
from llamon_playground.host_manager.lifeline import STAND_DOWN, Lifeline, watch


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
def test_the_waiting_reaper_loads_only_what_reading_its_pipe_needs(tmp_path: Path) -> None:
    """A reaper waits as long as its daemon lives: psutil (and asyncio, through the Host's
    environment helpers) load only once the daemon is gone and there is a tree to end."""
    lifeline = Lifeline.start(tmp_path / "host.json", dict(os.environ))
    pid = lifeline.process.pid
    try:
        # Blocked reading its pipe (stdin): its imports are done.
        wait_for(lambda: "pipe_read" in Path(f"/proc/{pid}/wchan").read_text(), 10,
                 "the reaper to wait on its pipe")
        mapped = {m.path for m in psutil.Process(pid).memory_maps()}
        assert not [path for path in mapped if "psutil" in path], mapped
    finally:
        lifeline.close()  # EOF: it reaps (a tree that does not exist) and exits
        assert lifeline.process.wait(10) == 0
