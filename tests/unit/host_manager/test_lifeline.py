"""The reaper's lifeline: EOF means the daemon is gone; a stand-down means it stopped its
Host itself. (The whole flow, a SIGKILLed daemon's tree ending, is in
tests/e2e/test_host_supervision.py.)"""

from __future__ import annotations

import os

from llamon_playground.host_manager.lifeline import STAND_DOWN, watch


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
