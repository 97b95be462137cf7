"""The door can't be held shut: connections the door has not admitted (no request with the
token yet) get a short head timeout and are the first to go at the cap, so a client with
the token always gets a slot; a rotated token ends every connection and stream that used
the old one; what the HTTP parser refuses is answered with our own `Server` and a fixed
body."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from typing import Self

import orjson
import pytest

from tests.e2e.test_daemon_parser_errors import BAD, MARK
from tests.support.door import (
    Front,
    P,
    cli,
    raw_request,
    read_answer,
    send_refused,
    start_front,
)
from tests.support.procs import Stack
from tests.support.transports import both_transports
from tests.support.waiting import wait_for

pytestmark = both_transports  # every test on each of the front's transports

FLOOD = 300


def head(front: Front, path: str, token: str | None = None, close: bool = False) -> bytes:
    lines = [f"GET {path} HTTP/1.1", f"Host: 127.0.0.1:{front.port}",
             f"Authorization: Bearer {token or front.token}"]
    if close:
        lines.append("Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def ended(sock: socket.socket, within: float) -> bool:
    """True if the peer ends the connection (EOF or reset) before `within` seconds pass;
    whatever arrives meanwhile (events, heartbeats) is read and dropped."""
    deadline = time.monotonic() + within
    while (left := deadline - time.monotonic()) > 0:
        sock.settimeout(left)
        try:
            if not sock.recv(65536):
                return True
        except (ConnectionResetError, BrokenPipeError):
            return True
        except TimeoutError:
            return False
    return False


class IdleFlood:
    """`count` TCP connections that send nothing, each closed and opened again in turn for
    as long as the flood runs (a thread: the test's own calls block)."""

    def __init__(self, port: int, count: int) -> None:
        self.port, self.count = port, count
        self.socks: list[socket.socket | None] = [None] * count
        self.opened = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _open(self, i: int) -> None:
        old = self.socks[i]
        if old is not None:
            old.close()
        try:
            self.socks[i] = socket.create_connection(("127.0.0.1", self.port), timeout=5)
            self.opened += 1
        except OSError:
            self.socks[i] = None

    def _run(self) -> None:
        while not self._stop.is_set():
            for i in range(self.count):
                if self._stop.is_set():
                    return
                self._open(i)
                self._stop.wait(0.002)  # pacing, not synchronisation: ~500 reopens a second

    def __enter__(self) -> Self:
        for i in range(self.count):
            self._open(i)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)
        for sock in self.socks:
            if sock is not None:
                sock.close()


@pytest.fixture
def started(stack: Stack) -> Iterator[Stack]:
    stack.start_daemon()
    yield stack


def test_a_client_with_the_token_gets_a_slot_through_an_idle_flood(started: Stack) -> None:
    front = start_front(started)
    with IdleFlood(front.port, FLOOD) as flood:
        wait_for(lambda: flood.opened >= 2 * FLOOD, 30, "the flood to reopen its connections")
        answers = [raw_request(front.port, head(front, "/health").rstrip(b"\r\n"))
                   for _ in range(20)]
    assert [a.status for a in answers] == [200] * 20, [a.body[:200] for a in answers]
    front.proc.stop()
    assert "Traceback" not in front.proc.output()


def test_a_silent_connection_gets_the_head_timeout_an_admitted_one_does_not(
        started: Stack) -> None:
    front = start_front(started, env={"LLAMON_PLAYGROUND_FRONT_HEAD_TIMEOUT": "1",
                                      "LLAMON_PLAYGROUND_FRONT_IDLE_TIMEOUT": "120"})
    with socket.create_connection(("127.0.0.1", front.port), timeout=10) as admitted:
        admitted.sendall(head(front, "/health"))
        assert read_answer(admitted).status == 200
        # Opened after the admitted one's request: once it is closed, the admitted one has
        # been idle longer than the head timeout.
        with socket.create_connection(("127.0.0.1", front.port), timeout=10) as silent:
            assert ended(silent, 20), "a connection that sends nothing is closed"
        admitted.sendall(head(front, "/health"))
        assert read_answer(admitted).status == 200
    # A request without the token does not earn a slot either.
    with socket.create_connection(("127.0.0.1", front.port), timeout=10) as refused:
        refused.sendall(head(front, "/health", token="wrong"))
        assert read_answer(refused).status == 401
        assert ended(refused, 20)


def _open_stream(front: Front, path: str) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", front.port), timeout=10)
    sock.sendall(head(front, path))
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"{path} closed before its head"
        data += chunk
    assert data.startswith(b"HTTP/1.1 200"), data[:300]
    return sock


def test_a_rotated_token_ends_the_streams_and_connections_that_used_the_old_one(
        started: Stack) -> None:
    front = start_front(started)
    status, session = _post(front, f"{P}/sessions", {"title": "rotation"})
    assert status == 201
    status, run = _post(front, f"{P}/sessions/{session['id']}/runs",
                        {"parts": [{"kind": "text", "text": "slow"}]})
    assert status == 202
    events = _open_stream(front, f"{P}/events")
    run_events = _open_stream(front, f"{P}/runs/{run['run_id']}/events")
    idle = socket.create_connection(("127.0.0.1", front.port), timeout=10)
    idle.sendall(head(front, "/health"))
    assert read_answer(idle).status == 200
    try:
        # Still open before the rotation (a stream that ends by itself proves nothing).
        assert not ended(events, 0.5) and not ended(run_events, 0.5)
        rotated = cli(started, "token", "--rotate", str(started.project))
        assert rotated.returncode == 0, rotated.stderr
        for sock, what in ((events, "/events"), (run_events, "/runs/{id}/events"),
                           (idle, "an idle kept-alive connection")):
            assert ended(sock, 10), f"{what} outlived the old token"
    finally:
        for sock in (events, run_events, idle):
            sock.close()
    new = rotated.stdout.strip()
    assert raw_request(front.port, head(front, "/health", token=new).rstrip()).status == 200
    assert raw_request(front.port, head(front, "/health").rstrip()).status == 401
    front.proc.stop()
    assert "Traceback" not in front.proc.output()


def _post(front: Front, path: str, body: dict[str, object],
          token: str | None = None) -> tuple[int, dict[str, object]]:
    data = orjson.dumps(body)
    answer = raw_request(front.port, (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{front.port}\r\n"
        f"Authorization: Bearer {token or front.token}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(data)}").encode(), data)
    return answer.status, orjson.loads(answer.body) if answer.body else {}


FRONT_BAD = {**BAD, "method FOO": f"FOO /health?{MARK} HTTP/1.1\r\nHost: d\r\n\r\n"}


@pytest.fixture(scope="module")
def plain_front(module_daemon: Stack) -> Front:
    """One front for every refused request: each comes on a connection of its own."""
    return start_front(module_daemon)


@pytest.mark.parametrize("raw", FRONT_BAD.values(), ids=FRONT_BAD.keys())
def test_a_request_the_parser_refuses_gets_our_answer_on_the_front(plain_front: Front,
                                                                    raw: str) -> None:
    with socket.create_connection(("127.0.0.1", plain_front.port), timeout=10) as sock:
        answer = send_refused(sock, raw.encode("latin-1"))
    head_, _, body = answer.partition(b"\r\n\r\n")
    status = int(head_.split(b" ", 2)[1])
    assert 400 <= status < 500, answer[:200]
    assert b"\r\nserver: llamon-playground" in head_.lower(), head_
    assert b"aiohttp" not in answer and b"python" not in answer.lower()
    assert MARK.encode() not in answer, "the request is not echoed"
    assert b'"detail"' in body


def test_the_fronts_own_messages_name_no_absolute_path(stack: Stack) -> None:
    """The daemon not running, a body too large, a refused encoding: none of the front's
    answers names the project's, the runtime directory's or the socket's path."""
    front = start_front(stack)  # no daemon: every relayed request is the front's own 503
    answers = [raw_request(front.port, head(front, f"{P}/sessions").rstrip()),
               raw_request(front.port, head(front, "/health").rstrip())]
    answers.append(raw_request(front.port, (
        f"POST {P}/sessions HTTP/1.1\r\nHost: 127.0.0.1:{front.port}\r\n"
        f"Authorization: Bearer {front.token}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {64 * 1024 * 1024}").encode()))
    assert [a.status for a in answers] == [503, 503, 413], [a.body for a in answers]
    for answer in answers:
        text = answer.body.decode()
        for path in (stack.project, stack.runtime_base, stack.settings.socket_path):
            assert str(path) not in text, text
        assert "/tmp/" not in text and "/home/" not in text, text
