"""The front under a connection flood, with a small open-files limit (ulimit -n 128):
connections that send nothing give their slots up to new ones and are closed after the head
timeout, a client with the token is answered, a connection past a cap of admitted ones gets
a 503 at once, and the log holds no traceback storm."""

from __future__ import annotations

import socket
import sys

import orjson

from tests.support.door import raw_request, read_answer
from tests.support.procs import REPO, Proc, Stack, front_url
from tests.support.transports import both_transports
from tests.support.waiting import wait_for

pytestmark = both_transports  # every test on each of the front's transports

IDLE = 140


def test_idle_connections_cannot_take_the_front_down(stack: Stack) -> None:
    stack.start_daemon()
    # Admitted connections are kept long (the part about the 503 needs them all open);
    # ones that send nothing get a short head timeout.
    env = {**stack.env, "LLAMON_PLAYGROUND_FRONT_IDLE_TIMEOUT": "120",
           "LLAMON_PLAYGROUND_FRONT_HEAD_TIMEOUT": "2"}
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
        # Past the cap, a new connection takes the slot of the oldest one that sent nothing:
        # the first ones are closed at once, and a client with the token is answered.
        assert ended(idle[0], 10)
        assert raw_request(port, health).status == 200
        # The rest are closed by the front too (the head timeout): each sees EOF.
        for sock in idle:
            assert ended(sock, 30)
    finally:
        for sock in idle:
            sock.close()
    # When every slot holds an admitted connection, one more is answered 503 and closed.
    kept_alive = health.replace(b"Connection: close\r\n", b"")
    admitted: list[socket.socket] = []
    try:
        for _ in range(IDLE):
            sock = socket.create_connection(("127.0.0.1", port), timeout=10)
            admitted.append(sock)
            sock.sendall(kept_alive)
            answer = read_answer(sock)
            if answer.status == 503:
                break
            assert answer.status == 200
        assert answer.status == 503, "the cap was never reached"
        assert orjson.loads(answer.body)["detail"]["error"] == "too_many_connections"
        assert len(admitted) > 8
    finally:
        for sock in admitted:
            sock.close()
    wait_for(lambda: raw_request(port, health).status == 200, 10, "a /health answer")
    front.stop()
    text = front.output()
    assert "Traceback" not in text and len(text) < 20_000, text[-3000:]


def ended(sock: socket.socket, within: float) -> bool:
    """True once the front ends the connection (EOF or reset) within `within` seconds."""
    sock.settimeout(within)
    try:
        while sock.recv(4096):
            pass
    except ConnectionResetError:
        pass
    except TimeoutError:
        return False
    return True
