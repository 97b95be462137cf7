"""The daemon socket's trust: a private runtime directory, and only our uid as a peer."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from tests.support.door import cli
from tests.support.procs import Stack

NOBODY = 65534
CHILDREN = Path(__file__).resolve().parents[1] / "children"
# The peer clients run under another uid with the system Python: their text is passed with
# -c, as that uid may not be able to read the checkout (or the venv).
PEER_CLIENT = CHILDREN / "peer_health_client.py"
HANDOVER_CLIENT = CHILDREN / "peer_handover_client.py"


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_runtime_dir_is_ours_and_private_and_the_socket_0600(daemon: Stack) -> None:
    s = daemon.settings
    for path in (s.runtime_base, s.runtime_dir):
        st = os.lstat(path)
        assert stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and mode(path) == 0o700
    for sock in (s.socket_path, s.handover_path):
        assert stat.S_ISSOCK(os.lstat(sock).st_mode) and mode(sock) == 0o600


def test_a_loose_runtime_dir_is_tightened_to_0700(stack: Stack) -> None:
    stack.settings.runtime_dir.mkdir(parents=True)
    os.chmod(stack.settings.runtime_dir, 0o755)
    stack.start_daemon()
    assert mode(stack.settings.runtime_dir) == 0o700


@pytest.mark.parametrize("which", ["runtime_dir", "runtime_base"])
@pytest.mark.parametrize("command", ["daemon", "front"])
def test_a_symlinked_runtime_dir_is_refused(stack: Stack, tmp_path: Path, which: str,
                                            command: str) -> None:
    target = tmp_path / "elsewhere"
    target.mkdir(mode=0o700)
    link = stack.settings.runtime_dir if which == "runtime_dir" else stack.settings.runtime_base
    if which == "runtime_base":
        shutil.rmtree(link)
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(target)
    try:
        result = cli(stack, command, str(stack.project), *(["--port", "0"] if command == "front"
                                                           else []), timeout=30)
        assert result.returncode == 1 and "not a real directory" in result.stderr
        assert not any(target.iterdir())  # nothing was created through the link
    finally:
        link.unlink()


@pytest.mark.parametrize("command", ["daemon", "front"])
def test_a_runtime_dir_of_another_user_is_refused(stack: Stack, command: str) -> None:
    stack.settings.runtime_dir.mkdir(parents=True, mode=0o700)
    os.chown(stack.settings.runtime_dir, NOBODY, NOBODY)
    result = cli(stack, command, str(stack.project), *(["--port", "0"] if command == "front"
                                                       else []), timeout=30)
    assert result.returncode == 1 and f"belongs to uid {NOBODY}" in result.stderr


def test_clients_refuse_a_runtime_dir_of_another_user(stack: Stack) -> None:
    stack.settings.runtime_dir.mkdir(parents=True, mode=0o700)
    os.chown(stack.settings.runtime_dir, NOBODY, NOBODY)
    result = cli(stack, "runs", str(stack.project))
    assert result.returncode == 3 and "not a directory of ours" in result.stderr


def as_uid(uid: int | None, socket_path: Path, client: Path = PEER_CLIENT) -> str:
    prefix = [] if uid is None else ["setpriv", f"--reuid={uid}", f"--regid={uid}",
                                     "--clear-groups"]
    done = subprocess.run([*prefix, "/usr/bin/python3", "-c", client.read_text(), str(socket_path)],
                          capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


NEEDS_SETPRIV = pytest.mark.skipif(
    os.getuid() != 0 or shutil.which("setpriv") is None,
    reason="needs root and setpriv to run a client under another uid")


def loosen(stack: Stack, sock: Path) -> None:
    """Loosen what normally keeps others out, to reach the second lock: SO_PEERCRED."""
    for path in (stack.settings.runtime_base, stack.settings.runtime_dir):
        os.chmod(path, 0o711)
    os.chmod(sock, 0o666)


@NEEDS_SETPRIV
def test_a_peer_of_another_uid_is_refused(daemon: Stack) -> None:
    s = daemon.settings
    loosen(daemon, s.socket_path)
    foreign = as_uid(NOBODY, s.socket_path)
    assert foreign.startswith("HTTP/1.1 403") and "peer_not_allowed" in foreign
    assert as_uid(None, s.socket_path).startswith("HTTP/1.1 200")
    assert daemon.daemon is not None
    assert f"refused a request from uid {NOBODY}" in daemon.daemon.output()


@NEEDS_SETPRIV
def test_a_hand_over_from_another_uid_is_dropped(daemon: Stack) -> None:
    s = daemon.settings
    loosen(daemon, s.handover_path)
    # Another uid: no reply, and the descriptor it sent is closed unread.
    assert as_uid(NOBODY, s.handover_path, HANDOVER_CLIENT).split() == ["b''", "b''"]
    assert daemon.daemon is not None
    assert f"refused a hand-over from uid {NOBODY}" in daemon.daemon.output()
    # Our uid gets an answer: BUSY, as a socket pair is not a client's TCP connection.
    assert as_uid(None, s.handover_path, HANDOVER_CLIENT).split() == ["b'B'", "b''"]
