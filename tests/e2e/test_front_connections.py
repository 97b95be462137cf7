"""The front under a connection flood, with a small open-files limit (ulimit -n 128): idle
connections are closed after the idle timeout, connections past the cap get a 503 at once,
a real client is still answered, and the log holds no traceback storm."""

from __future__ import annotations

import socket
import sys
import time

from tests.support.door import raw_request
from tests.support.procs import REPO, Proc, Stack, front_url
from tests.support.transports import both_transports
from tests.support.waiting import wait_for

pytestmark = both_transports  # every test on each of the front's transports

IDLE = 140


def test_idle_connections_cannot_take_the_front_down(stack: Stack) -> None:
    stack.start_daemon()
    # Long enough that no idle connection is closed (and its place given to a later one)
    # before the whole flood is open, even on a busy machine.
    env = {**stack.env, "LLAMON_PLAYGROUND_FRONT_IDLE_TIMEOUT": "6"}
    command = (f"ulimit -n 128 && exec {sys.executable} -m llamon_playground front "
               f"{stack.project} --port 0")
    front = Proc(["/bin/sh", "-c", command], env, stack.runtime_base / "flood-front.log", REPO)
    stack.fronts.append(front)
    url = wait_for(lambda: front_url(front), 30, "the front's URL")
    port = int(url.rsplit(":", 1)[1])
    token = stack.env["LLAMON_PLAYGROUND_TOKEN"]
    health = (f"GET /health HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer "
              f"{token}\r\nConnection: close\r\n\r\n").encode()
    idle = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(IDLE)]
    try:
        # Past the cap, a connection is answered 503 and closed at once.
        refused = []
        for sock in idle[-8:]:
            sock.settimeout(10)
            refused.append(sock.recv(200))
        assert all(r.startswith(b"HTTP/1.1 503") for r in refused), refused
        assert raw_request(port, health).status in (200, 503)
        # The idle ones are closed by the front: each sees EOF (or a reset).
        end = time.monotonic() + 30  # a deadline for all of them, not a pause
        for sock in idle:
            sock.settimeout(max(end - time.monotonic(), 0.1))
            try:
                while sock.recv(4096):
                    pass
            except ConnectionResetError:
                pass
        wait_for(lambda: raw_request(port, health).status == 200, 10, "a /health answer")
    finally:
        for sock in idle:
            sock.close()
    front.stop()
    text = front.output()
    assert "Traceback" not in text and len(text) < 20_000, text[-3000:]
