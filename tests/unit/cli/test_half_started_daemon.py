"""`up` never leaves a daemon behind that did not become healthy in time."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from llamon_playground.cli.client import DaemonNotRunning, wait_healthy
from llamon_playground.common.config import build_settings


async def test_a_spawned_daemon_that_never_answers_is_ended(tmp_path: Path) -> None:
    settings = build_settings(tmp_path, {"LLAMON_PLAYGROUND_RUNTIME_DIR": str(tmp_path / "rt")})
    # A real process that never serves the socket, as a daemon stuck in boot would.
    stuck = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        with pytest.raises(DaemonNotRunning):
            await wait_healthy(settings, stuck, timeout=0.5)
        assert stuck.poll() is not None, "the stuck daemon was left running"
    finally:
        if stuck.poll() is None:
            stuck.kill()
            stuck.wait()
