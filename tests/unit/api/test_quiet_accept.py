"""Out of file descriptors, the accept loop writes one warning, not a traceback a second.

A real EMFILE: a child process with a small open-files limit serves connections it never
closes; this test opens more than it can take and waits until asyncio has retried the
failed accept three times."""

from __future__ import annotations

import socket
import subprocess
import sys

from tests.support.procs import REPO

CHILD = REPO / "tests" / "children" / "quiet_accept_server.py"


def test_accept_out_of_descriptors_is_one_warning_line() -> None:
    child = subprocess.Popen([sys.executable, str(CHILD)], cwd=REPO, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    clients = []
    try:
        assert child.stdout is not None
        port = int(child.stdout.readline())
        clients = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(40)]
        _, err = child.communicate(timeout=30)
    finally:
        for sock in clients:
            sock.close()
        child.kill()
        child.wait()
    assert child.returncode == 0, err
    assert "Traceback" not in err and err.count("cannot accept connections") == 1, err
