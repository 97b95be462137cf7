"""The token holder always gets in (docs/security.md, "Connections"): under a flood of
connections sending partial heads and reconnecting the moment the front closes them, every
request with the token is answered; the token holder's own streams past the front's stream
cap are answered 429, and its other requests are still served."""

from __future__ import annotations

import socket
import sys
from collections.abc import Iterator

import orjson
import pytest

from tests.support.door import Front, P, raw_request, read_answer, start_front
from tests.support.procs import REPO, Proc, Stack
from tests.support.transports import both_transports
from tests.support.waiting import wait_for

pytestmark = both_transports  # every test on each of the front's transports

FLOOD_SCRIPT = REPO / "scripts" / "benchmarks" / "children" / "reconnect_flood.py"
FLOOD = 100  # sockets: three times the cap (each one past it waits for a slot to ripen)
CAP = 32  # the front's connection cap here: the flood is always past it
PROBES = 40
STREAM_CAP = CAP - CAP // 4  # api/slots.py: stream_cap


@pytest.fixture
def started(stack: Stack) -> Iterator[Stack]:
    stack.start_daemon()
    yield stack


def capped_front(stack: Stack) -> Front:
    # A long head timeout: a silent connection the front closes was made to give its slot up.
    return start_front(stack, env={"LLAMON_PLAYGROUND_FRONT_MAX_CONNECTIONS": str(CAP),
                                   "LLAMON_PLAYGROUND_FRONT_HEAD_TIMEOUT": "60"})


def health(front: Front) -> bytes:
    return (f"GET /health HTTP/1.1\r\nHost: 127.0.0.1:{front.port}\r\n"
            f"Authorization: Bearer {front.token}").encode()


def status_of(front: Front, head: bytes) -> int | str:
    """The answer's status, or what went wrong instead (closed unanswered, a reset...)."""
    try:
        return raw_request(front.port, head, timeout=30).status
    except (OSError, IndexError) as exc:  # IndexError: closed before any answer
        return type(exc).__name__


def closed_by_front(sock: socket.socket, within: float) -> bool:
    sock.settimeout(within)
    try:
        return sock.recv(65536) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def test_every_request_with_the_token_is_answered_through_a_reconnect_flood(
        started: Stack) -> None:
    front = capped_front(started)
    flood = Proc([sys.executable, str(FLOOD_SCRIPT), str(front.port), str(FLOOD)], started.env,
                 started.runtime_base / "flood.log", REPO)
    started.fronts.append(flood)  # the stack's teardown stops it too
    try:
        # The flood has the front giving slots up: a silent connection of ours, opened
        # into it, is closed long before the head timeout.
        def churning() -> bool:
            with socket.create_connection(("127.0.0.1", front.port), timeout=30) as silent:
                return closed_by_front(silent, 5)
        wait_for(churning, 60, "the flood to fill the front's slots")
        answers = [status_of(front, health(front)) for _ in range(PROBES)]
    finally:
        flood.stop()
    # Before the grace, the youngest connection (one whose head was not read yet) was the
    # first to go: most of these were closed unanswered.
    assert answers == [200] * PROBES, answers
    opened = int(flood.output().split()[0])
    assert opened > FLOOD + CAP, f"the flood reconnected only {opened} times"
    front.proc.stop()
    assert "Traceback" not in front.proc.output()


def open_stream(front: Front) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", front.port), timeout=30)
    sock.sendall(f"GET {P}/events HTTP/1.1\r\nHost: 127.0.0.1:{front.port}\r\n"
                 f"Authorization: Bearer {front.token}\r\n\r\n".encode())
    return sock


def stream_status(sock: socket.socket) -> int:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"closed before the answer's head: {data!r}"
        data += chunk
    return int(data.split(b" ", 2)[1])


def test_streams_past_the_cap_get_429_and_everything_else_is_still_served(
        started: Stack) -> None:
    front = capped_front(started)
    streams = [open_stream(front) for _ in range(STREAM_CAP)]
    try:
        assert [stream_status(s) for s in streams] == [200] * STREAM_CAP
        with open_stream(front) as over:
            answer = read_answer(over)
            assert answer.status == 429, answer
            detail = orjson.loads(answer.body)["detail"]
            assert detail["error"] == "too_many_streams"
            assert f"at most {STREAM_CAP} streams" in detail["message"]
            assert closed_by_front(over, 10), "a refused stream keeps no slot"
        for _ in range(3):  # a client in a loop: its refusals are one log line a minute
            with open_stream(front) as over:
                assert read_answer(over).status == 429
        assert status_of(front, health(front)) == 200
        sessions = raw_request(front.port, (
            f"GET {P}/sessions HTTP/1.1\r\nHost: 127.0.0.1:{front.port}\r\n"
            f"Authorization: Bearer {front.token}").encode(), timeout=30)
        assert sessions.status == 200, sessions.body[:300]
        # Each stream is still open (a stream that ended proves nothing).
        for sock in streams:
            sock.settimeout(0.05)
            try:
                assert sock.recv(65536) != b"", "a stream under the cap was ended"
            except TimeoutError:
                pass
        # One stream closed gives its place to the next.
        streams.pop().close()

        def another() -> bool:
            sock = open_stream(front)
            if stream_status(sock) == 200:
                streams.append(sock)
                return True
            sock.close()
            return False
        wait_for(another, 30, "a stream in the place of the closed one")
    finally:
        for sock in streams:
            sock.close()
    front.proc.stop()
    output = front.proc.output()
    assert "Traceback" not in output
    refused = [line for line in output.splitlines() if "-> 429" in line]
    assert len(refused) == 1, refused
    assert "429 too_many_streams (more like it: one line a minute at most)" in refused[0]
