"""A state listener that raises cannot break the supervisor: a real Host process (the tiny
test Host serving its agent card), a listener that raises on every move, and the Host killed
with SIGKILL: the supervisor still sees the exit and backs off, then restarts it."""

from __future__ import annotations

import logging
import os
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

from llamon_playground.host_manager.crash_policy import CrashSettings
from llamon_playground.host_manager.spawn.spawner import ColdSpawner
from llamon_playground.host_manager.state import HostState
from llamon_playground.host_manager.supervisor import HostConfig, HostSupervisor
from llamon_playground.host_manager.watch.fingerprint import WatchRules
from tests.support.procs import pid_ended
from tests.support.projects import CHILD
from tests.support.waiting import eventually


def card_host(tmp_path: Path) -> HostConfig:
    # An exit within 30 s of Ready is a crash: the kill below is followed by a back-off.
    return HostConfig(
        project_dir=tmp_path, command=lambda: [sys.executable, str(CHILD), "card"],
        base_env={"PATH": os.environ.get("PATH", "")}, log_path=tmp_path / "host.log",
        record_path=tmp_path / "host.json", capture_socket=str(tmp_path / "d.sock"),
        rules=WatchRules(tmp_path),
        crash=CrashSettings(min_uptime=30.0, backoff_base=0.2, backoff_cap=0.2, limit=5,
                            window=60.0),
        start_timeout=30.0, stop_grace=2.0, spawner=ColdSpawner(), log_bytes=1 << 20,
        log_file_bytes=1 << 20, log_file_backups=1)


class Broken:
    """A listener with a bug: it raises on every state change."""

    def __call__(self, status: dict[str, Any]) -> None:
        raise RuntimeError(f"listener bug on {status['state']}")


async def test_a_listener_that_raises_leaves_the_host_watched(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    supervisor = HostSupervisor(card_host(tmp_path))
    heard: list[tuple[str, int | None]] = []
    supervisor.add_state_listener(Broken())
    supervisor.add_state_listener(lambda s: heard.append((s["state"], s["generation"])))
    caplog.set_level(logging.ERROR, logger="llamon_playground.host_manager.state")
    try:
        first = await supervisor.ensure_ready()  # the listener's raise never reaches here
        assert supervisor.state == HostState.READY
        os.kill(first.pid, signal.SIGKILL)
        assert await eventually(lambda: pid_ended(first.pid), what="the Host died")
        # Watched: the exit is seen (a crash this soon after Ready: a back-off), and the
        # automatic restart brings up the next generation.
        await eventually(supervisor.status, lambda s: s["state"] == "ready"
                         and s["generation"] == 2, "the Host restarted after its back-off")
        assert heard == [("starting", 1), ("ready", 1), ("backoff", 1), ("stopping", 1),
                         ("stopped", 1), ("starting", 2), ("ready", 2)], \
            "the listener after the broken one heard every move"
        assert supervisor.status()["last_exit_code"] == -signal.SIGKILL
        failures = [r for r in caplog.records if "Broken" in r.getMessage()]
        assert len(failures) == len(heard) and all(r.exc_info for r in failures), caplog.text
    finally:
        await supervisor.close()
    assert supervisor.state == HostState.STOPPED
