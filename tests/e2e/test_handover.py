"""Streams the front hands over to the daemon (api/handover.py, daemon/http/adopt.py).

The daemon answers a stream on the client's own connection: the stream goes on when the
front dies, nothing the door did not admit is served on that connection, the daemon lets
go of it when the client leaves, and past the daemon's cap the front relays as before."""

from __future__ import annotations

import signal
import socket
from collections.abc import Iterator

import psutil
import pytest

from tests.support.api import TERMINAL, Api
from tests.support.door import Front, P, start_front
from tests.support.procs import Stack
from tests.support.waiting import wait_for

CAP = 8  # the smallest cap there is (fd_budget.MIN_CAP): the daemon's, from the front's


def daemon_tcp(stack: Stack) -> int:
    """The client connections the daemon holds (it listens on no TCP port of its own)."""
    assert stack.daemon is not None
    return len(psutil.Process(stack.daemon.pid).net_connections(kind="tcp"))


def stream_request(front: Front, path: str, extra: str = "") -> bytes:
    return (f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{front.port}\r\n"
            f"Authorization: Bearer {front.token}\r\n{extra}\r\n").encode()


def open_stream(front: Front, path: str) -> socket.socket:
    """A raw client on `path`, returned once the answer's head has come."""
    sock = socket.create_connection(("127.0.0.1", front.port), timeout=30)
    sock.sendall(stream_request(front, path))
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = sock.recv(4096)
        assert chunk, head
        head += chunk
    assert head.startswith(b"HTTP/1.1 200"), head
    return sock


def read_to_close(sock: socket.socket) -> bytes:
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data


@pytest.fixture
def capped(stack: Stack) -> Iterator[Stack]:
    stack.env["LLAMON_PLAYGROUND_FRONT_MAX_CONNECTIONS"] = str(CAP)
    stack.start_daemon()
    yield stack


async def test_a_stream_goes_on_when_the_front_dies(daemon: Stack) -> None:
    front = start_front(daemon)
    direct = Api.for_socket(str(daemon.settings.socket_path))
    via_front = Api.for_url(front.url, front.token)
    try:
        run_id = await direct.start_run(await direct.session(), "slow")
        received = []
        async for event in via_front.stream(run_id):
            received.append(event)
            if event.event == "output.delta" and front.proc.popen.poll() is None:
                front.proc.signal(signal.SIGKILL)
                front.proc.wait(30)
        # Read whole, after the front was gone: the same events, in full, as stored.
        stored = await direct.events(run_id)
        assert received == stored
        assert (await direct.run(run_id))["status"] in TERMINAL
        assert len([e for e in received if e.event == "output.delta"]) > 1
    finally:
        await direct.close()
        await via_front.close()


async def test_nothing_behind_a_stream_is_served(daemon: Stack) -> None:
    """A request pipelined behind a stream never reaches the daemon: the door saw only the
    stream's head, and the connection closes when the stream ends."""
    front = start_front(daemon)
    direct = Api.for_socket(str(daemon.settings.socket_path))
    try:
        run_id = await direct.start_run(await direct.session(), "hello")
        await direct.wait_status(run_id)
    finally:
        await direct.close()
    with socket.create_connection(("127.0.0.1", front.port), timeout=30) as sock:
        sock.sendall(stream_request(front, f"{P}/runs/{run_id}/events")
                     + stream_request(front, f"{P}/sessions"))
        data = read_to_close(sock)
    head, _, body = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200") and b"text/event-stream" in head
    assert b"connection: close" in head.lower()
    assert b'"status":"completed"' in body and body.endswith(b"\r\n0\r\n\r\n")
    assert b"HTTP/1.1" not in body and b'"sessions"' not in body


def test_the_daemon_lets_go_when_the_client_leaves(daemon: Stack) -> None:
    front = start_front(daemon)
    sock = open_stream(front, f"{P}/events")
    wait_for(lambda: daemon_tcp(daemon) == 1, 30, "the daemon to hold the client's connection")
    sock.close()
    wait_for(lambda: daemon_tcp(daemon) == 0, 30, "the daemon to let the connection go")


def read_until(sock: socket.socket, marker: bytes) -> bytes:
    data = b""
    while marker not in data:
        chunk = sock.recv(65536)
        assert chunk, f"closed before {marker!r}: {data[-300:]!r}"
        data += chunk
    return data


async def test_past_its_cap_the_daemon_leaves_streams_to_the_front(capped: Stack) -> None:
    front = start_front(capped)
    taken: list[socket.socket] = []
    relayed: socket.socket | None = None
    try:
        taken.extend(open_stream(front, f"{P}/events") for _ in range(CAP))
        wait_for(lambda: daemon_tcp(capped) == CAP, 30, "the daemon to hold its cap")
        relayed = open_stream(front, f"{P}/events")  # answered all the same, by the relay
        assert daemon_tcp(capped) == CAP
        taken.pop().close()
        wait_for(lambda: daemon_tcp(capped) == CAP - 1, 30, "a slot to free up")
        taken.append(open_stream(front, f"{P}/events"))
        wait_for(lambda: daemon_tcp(capped) == CAP, 30, "the freed slot to be taken")
        # The front's death ends only the stream it relayed ...
        front.proc.signal(signal.SIGKILL)
        front.proc.wait(30)
        read_to_close(relayed)  # returns at the close (the socket's timeout raises otherwise)
        # ... and the daemon's streams still carry what happens next.
        direct = Api.for_socket(str(capped.settings.socket_path))
        try:
            session = await direct.session()
            await direct.ok("PATCH", f"sessions/{session}", {"title": "still here"})
        finally:
            await direct.close()
        for sock in taken:
            assert b"event: session.updated" in read_until(sock, b'"still here"')
    finally:
        for sock in taken + ([relayed] if relayed is not None else []):
            sock.close()
