"""History is private: the state dir 0700 and the database, its WAL and SHM and every blob
0600, with a permissive umask (022) too, and a loosened state is tightened at the next open."""

from __future__ import annotations

import base64
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.api import Api
from tests.support.procs import Stack


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


@pytest.fixture
def umask_022() -> Iterator[None]:
    old = os.umask(0o022)  # the daemon inherits it, as under `up` from a shell
    try:
        yield
    finally:
        os.umask(old)


def state_modes(stack: Stack) -> dict[str, int]:
    s = stack.settings
    paths = {"state": s.state_dir, "files": s.files_dir, "db": s.db_path,
             "wal": Path(f"{s.db_path}-wal"), "shm": Path(f"{s.db_path}-shm")}
    paths.update({f"blob {p.name[:8]}": p for p in s.files_dir.iterdir()})
    return {name: mode(path) for name, path in paths.items()}


async def test_history_is_private_whatever_the_umask(umask_022: None, stack: Stack) -> None:
    stack.start_daemon()
    api = Api.for_socket(str(stack.settings.socket_path))
    try:
        session = await api.session()
        data = base64.b64encode(b"private bytes").decode()
        run_id = (await api.ok("POST", f"sessions/{session}/runs", {"parts": [
            {"kind": "text", "text": "hello"},
            {"kind": "file", "name": "a.bin", "bytes_base64": data}]}, 202))["run_id"]
        await api.wait_status(run_id)
        modes = state_modes(stack)
    finally:
        await api.close()
    assert any(name.startswith("blob") for name in modes)
    assert modes == {name: 0o700 if name in ("state", "files") else 0o600 for name in modes}


async def test_a_loosened_history_is_tightened_at_the_next_open(umask_022: None,
                                                               stack: Stack) -> None:
    stack.start_daemon()
    api = Api.for_socket(str(stack.settings.socket_path))
    try:
        await api.session()
    finally:
        await api.close()
    s = stack.settings
    for path, loose in ((s.state_dir, 0o755), (s.files_dir, 0o755), (s.db_path, 0o644)):
        os.chmod(path, loose)
    stack.start_daemon()  # a restart: recovery opens the existing database
    api = Api.for_socket(str(stack.settings.socket_path))
    try:
        await api.session()
    finally:
        await api.close()
    assert (mode(s.state_dir), mode(s.files_dir), mode(s.db_path)) == (0o700, 0o700, 0o600)
