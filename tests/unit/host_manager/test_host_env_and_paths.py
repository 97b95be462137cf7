"""What the Host inherits, and socket paths that fit whatever the project path."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from llamon_playground.common.config import build_settings
from llamon_playground.common.runtime_dir import RuntimeDirTooLong, acquire_lock
from llamon_playground.host_manager.environment import ENV_MARKER, child_env
from tests.support.procs import short_tmpdir


def test_socket_path_fits_for_a_very_long_project_path(tmp_path: Path) -> None:
    runtime = short_tmpdir("lpx")
    try:
        env = {"XDG_RUNTIME_DIR": str(runtime)}
        deep = tmp_path.joinpath(*["a-rather-long-folder-name"] * 12)
        settings = build_settings(deep, env)
        assert len(str(deep)) > 300
        assert len(str(settings.socket_path).encode()) < 108
        assert len(str(settings.socket_path)) == len(str(build_settings("/p", env).socket_path))
        assert build_settings(deep / "x", env).socket_path != settings.socket_path
    finally:
        shutil.rmtree(runtime)


def test_a_runtime_base_too_deep_for_a_socket_is_refused_clearly(tmp_path: Path) -> None:
    base = "/tmp/" + "d" * 100
    settings = build_settings(tmp_path, {"LLAMON_PLAYGROUND_RUNTIME_DIR": base})
    with pytest.raises(RuntimeDirTooLong, match="LLAMON_PLAYGROUND_RUNTIME_DIR"):
        acquire_lock(settings)
    assert not Path(base).exists(), "nothing was created"


def test_host_env_drops_the_service_managers_variables() -> None:
    base = {"PATH": "/bin", "NOTIFY_SOCKET": "/run/x", "LISTEN_FDS": "3", "LISTEN_PID": "1",
            "WATCHDOG_USEC": "100", "WATCHDOG_PID": "1", "KEEP_ME": "yes",
            "LLAMON_CAPTURE_TOKEN": "stale", "LLAMON_CAPTURE_SOCKET": "/tmp/stale.sock"}
    env = child_env(base, generation=3, port=4242, token="fresh-token",
                    capture_socket="/tmp/d.sock")
    assert not {"NOTIFY_SOCKET", "LISTEN_FDS", "LISTEN_PID", "WATCHDOG_USEC",
                "WATCHDOG_PID"} & env.keys()
    assert env["KEEP_ME"] == "yes" and env["PYTHONUNBUFFERED"] == "1"
    assert env["LLAMON_HOST_PORT"] == "4242" and env["LLAMON_CAPTURE_TOKEN"] == "fresh-token"
    assert env["LLAMON_HOST_URL"] == "http://127.0.0.1:4242"
    assert env["LLAMON_CAPTURE_SOCKET"] == "/tmp/d.sock"
    assert env[ENV_MARKER].endswith(":3")
    assert base["NOTIFY_SOCKET"] == "/run/x", "the daemon's own environment is untouched"
    assert base["LLAMON_CAPTURE_TOKEN"] == "stale"
