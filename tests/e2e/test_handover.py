"""Streams through the front, on both of its transports (docs/front-transport.md).

On the fast one the front lends a stream's connection to the daemon (api/handover.py,
daemon/http/adopt.py): the daemon writes the answer on the client's own connection and
gives the connection back. On the plain one (api/plain.py) the front relays the stream
over a connection of its own to the daemon. Either way the stream comes whole, the next
request on the connection is the front's, through its door, and the stream's carrier
ends when the client or the front goes. Past its cap the daemon takes no more loans and
the front relays: that test is the fast transport's alone."""

from __future__ import annotations

import asyncio
import signal
import socket
from collections.abc import AsyncIterator, Iterator

import orjson
import psutil
import pytest

from llamon_playground.common.sse import aiter_sse
from tests.support.api import TERMINAL, Api, SseEvent
from tests.support.door import Front, P, start_front
from tests.support.procs import Stack
from tests.support.transports import (
    FAST,
    both_transports,
    effective_transport,
    handover_only,
    unix_sockets,
)
from tests.support.waiting import wait_for

CAP = 8  # the smallest cap there is (fd_budget.MIN_CAP)
LAST_CHUNK = b"\r\n0\r\n\r\n"


def daemon_tcp(stack: Stack, front: Front) -> int:
    """The front's client connections the daemon holds a descriptor of (its connections to
    the Host are on other ports)."""
    assert stack.daemon is not None
    return sum(1 for c in psutil.Process(stack.daemon.pid).net_connections(kind="tcp")
               if c.laddr and c.laddr.port == front.port)


class Carriers:
    """Counts the connections that carry a front's streams: client connections lent to the
    daemon (fast), or the front's own connections to the daemon (plain)."""

    def __init__(self, stack: Stack, front: Front, transport: str | None) -> None:
        self.stack, self.front = stack, front
        self.lent = effective_transport(transport) == FAST
        self._own = unix_sockets(front.proc.pid)  # before the front's first request

    def __call__(self) -> int:
        if self.lent:
            return daemon_tcp(self.stack, self.front)
        return len(unix_sockets(self.front.proc.pid) - self._own)

    def none_lent(self) -> bool:
        """The daemon holds no client connection of this front's (a plain front lends none)."""
        return self.lent or daemon_tcp(self.stack, self.front) == 0


def request(front: Front, path: str, token: bool = True, close: bool = False) -> bytes:
    auth = f"Authorization: Bearer {front.token}\r\n" if token else ""
    connection = "Connection: close\r\n" if close else ""
    return (f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{front.port}\r\n{auth}{connection}"
            "\r\n").encode()


def connect(front: Front, timeout: float = 30) -> socket.socket:
    return socket.create_connection(("127.0.0.1", front.port), timeout=timeout)


async def finished_run(stack: Stack) -> tuple[str, list[SseEvent]]:
    """A run of "hello", ended, and its stored events."""
    direct = Api.for_socket(str(stack.settings.socket_path))
    try:
        run_id = await direct.start_run(await direct.session(), "hello")
        await direct.wait_status(run_id)
        return run_id, await direct.events(run_id)
    finally:
        await direct.close()


class Reader:
    """Answers read off one raw connection, in order."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buf = b""

    def _more(self) -> None:
        chunk = self.sock.recv(65536)
        assert chunk, f"closed; unread: {self.buf[-300:]!r}"
        self.buf += chunk

    def head(self) -> tuple[int, dict[str, str]]:
        while b"\r\n\r\n" not in self.buf:
            self._more()
        raw, _, self.buf = self.buf.partition(b"\r\n\r\n")
        lines = raw.decode("latin-1").split("\r\n")
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        return int(lines[0].split()[1]), headers

    def answer(self) -> tuple[int, dict[str, str], bytes]:
        """One whole answer: Content-Length, or chunked (decoded)."""
        status, headers = self.head()
        return status, headers, self.body(headers)

    def body(self, headers: dict[str, str]) -> bytes:
        if "content-length" in headers:
            size = int(headers["content-length"])
            while len(self.buf) < size:
                self._more()
            body, self.buf = self.buf[:size], self.buf[size:]
            return body
        assert headers.get("transfer-encoding") == "chunked", headers
        body = b""
        while True:
            while b"\r\n" not in self.buf:
                self._more()
            size_line, _, self.buf = self.buf.partition(b"\r\n")
            size = int(size_line, 16)
            while len(self.buf) < size + 2:
                self._more()
            body, self.buf = body + self.buf[:size], self.buf[size + 2:]
            if size == 0:
                return body

    def until(self, marker: bytes) -> bytes:
        while marker not in self.buf:
            self._more()
        return self.buf

    def to_close(self) -> bytes:
        """Everything up to the close (the socket's timeout raises if it never comes)."""
        while chunk := self.sock.recv(65536):
            self.buf += chunk
        return self.buf


async def sse_events(body: bytes) -> list[SseEvent]:
    async def one() -> AsyncIterator[bytes]:
        yield body
    return [SseEvent(int(e.id or 0), e.event, orjson.loads(e.data))
            async for e in aiter_sse(one())]


@pytest.fixture
def capped(stack: Stack) -> Iterator[Stack]:
    stack.env["LLAMON_PLAYGROUND_FRONT_MAX_CONNECTIONS"] = str(CAP)
    stack.start_daemon()
    yield stack


async def ticks(api: Api, run_id: str, count: int) -> None:
    """Until the run has streamed `count` output deltas (it is live then)."""
    seen = 0
    async for event in api.stream(run_id):
        seen += event.event == "output.delta"
        if seen == count:
            return
    raise AssertionError(f"run {run_id} ended after {seen} deltas")


@both_transports
async def test_a_suite_run_s_events_are_carried_like_a_run_s(
        daemon: Stack, front_transport: str | None) -> None:
    # The front lends every stream the daemon's route declaration names: this one was once
    # left out of the front's own list, and relayed.
    front = start_front(daemon)
    carriers = Carriers(daemon, front, front_transport)
    direct = Api.for_socket(str(daemon.settings.socket_path))
    try:
        slow = await direct.start_run(await direct.session(), "slow")
        await direct.first_output(slow)
        await direct.ok("DELETE", f"runs/{slow}")
        await direct.wait_status(slow)
        suite = await direct.ok("POST", "suites", {"name": "lent", "cases": [{"run_id": slow}]},
                                201)
        started = await direct.ok("POST", f"suites/{suite['id']}/runs", None, 202)
        suite_run = started["suite_run_id"]
        with connect(front) as sock:
            sock.sendall(request(front, f"{P}/suite-runs/{suite_run}/events"))
            reader = Reader(sock)
            status, headers = reader.head()
            assert status == 200 and headers["content-type"] == "text/event-stream"
            wait_for(lambda: carriers() == 1, 30, "the stream's carrier")
            assert carriers.none_lent()
            await direct.ok("DELETE", f"suite-runs/{suite_run}")  # the case would run 30 s
            reader.body(headers)
            sock.sendall(request(front, f"{P}/suite-runs/{suite_run}"))
            status, _, report = reader.answer()
            assert status == 200 and orjson.loads(report)["status"] == "cancelled"
    finally:
        await direct.close()


@both_transports
async def test_a_stream_comes_whole_and_the_connection_comes_back(
        daemon: Stack, front_transport: str | None) -> None:
    front = start_front(daemon)
    carriers = Carriers(daemon, front, front_transport)
    direct = Api.for_socket(str(daemon.settings.socket_path))
    try:
        run_id = await direct.start_run(await direct.session(), "slow")
        with connect(front) as sock:
            sock.sendall(request(front, f"{P}/runs/{run_id}/events"))
            reader = Reader(sock)
            status, headers = reader.head()
            assert status == 200 and headers["content-type"] == "text/event-stream"
            # Fast: written by the daemon itself, on the client's connection; plain: relayed
            # by the front, and the daemon holds nothing of the client's.
            wait_for(lambda: carriers() == 1, 30, "the stream's carrier")
            assert carriers.none_lent()
            # Live for a few ticks, then cancelled (the slow run would tick for 30 s): the
            # stream ends with the run.
            await asyncio.wait_for(ticks(direct, run_id, 2), 30)
            await direct.ok("DELETE", f"runs/{run_id}")
            body = reader.body(headers)
            # The same connection, given back: the front answers the next request.
            sock.sendall(request(front, f"{P}/runs/{run_id}"))
            status, _, run = reader.answer()
            assert status == 200 and orjson.loads(run)["status"] in TERMINAL
        received = await sse_events(body)
        assert received == await direct.events(run_id)  # every stored event, once, in order
        assert len([e for e in received if e.event == "output.delta"]) > 1
    finally:
        await direct.close()


@both_transports
async def test_a_stream_asked_with_connection_close_ends_with_its_connection(
        daemon: Stack) -> None:
    """The answer says close, and the connection ends with it (not at the front's idle
    timeout): lent, the daemon writes the answer's head, so it is told."""
    front = start_front(daemon)
    run_id, want = await finished_run(daemon)
    with connect(front, timeout=5) as sock:
        sock.sendall(request(front, f"{P}/runs/{run_id}/events", close=True))
        reader = Reader(sock)
        status, headers = reader.head()
        assert status == 200 and headers["connection"].lower() == "close"
        body = reader.body(headers)
        assert sock.recv(1) == b""  # closed right after the answer (a timeout fails here)
    assert await sse_events(body) == want


@both_transports
async def test_a_request_behind_a_stream_goes_through_the_door(daemon: Stack) -> None:
    """Requests pipelined behind a stream wait for it, and are the front's to answer: one
    without the token is refused, as the daemon (which checks no token) never would."""
    front = start_front(daemon)
    run_id, _ = await finished_run(daemon)
    with connect(front) as sock:
        sock.sendall(request(front, f"{P}/runs/{run_id}/events")
                     + request(front, f"{P}/sessions", token=False)
                     + request(front, f"{P}/sessions"))
        reader = Reader(sock)
        status, headers, body = reader.answer()
        assert status == 200 and headers["content-type"] == "text/event-stream"
        assert b'"status":"completed"' in body
        status, _, refused = reader.answer()
        assert status == 401 and orjson.loads(refused)["detail"]["error"] == "unauthorized"
        status, _, sessions = reader.answer()
        assert status == 200 and "sessions" in orjson.loads(sessions)


@both_transports
def test_the_stream_ends_upstream_when_the_client_leaves(daemon: Stack,
                                                         front_transport: str | None) -> None:
    """Lent, the daemon lets the client's connection go; relayed, the front closes its
    connection to the daemon (never back to its pool half read)."""
    front = start_front(daemon)
    carriers = Carriers(daemon, front, front_transport)
    sock = connect(front)
    sock.sendall(request(front, f"{P}/events"))
    assert Reader(sock).head()[0] == 200
    wait_for(lambda: carriers() == 1, 30, "the stream's carrier")
    sock.close()
    wait_for(lambda: carriers() == 0, 30, "the stream's carrier to end")


@both_transports
def test_a_front_that_dies_takes_its_streams_with_it(daemon: Stack,
                                                     front_transport: str | None) -> None:
    """The client sees its stream end (and reconnects by cursor) rather than hang on a
    connection nobody serves."""
    front = start_front(daemon)
    carriers = Carriers(daemon, front, front_transport)
    with connect(front) as sock:
        sock.sendall(request(front, f"{P}/events"))
        reader = Reader(sock)
        assert reader.head()[0] == 200
        wait_for(lambda: carriers() == 1, 30, "the stream's carrier")
        front.proc.signal(signal.SIGKILL)
        front.proc.wait(30)
        reader.to_close()
    wait_for(lambda: daemon_tcp(daemon, front) == 0, 30, "the daemon to let the connection go")


@handover_only
async def test_past_its_cap_the_daemon_leaves_streams_to_the_front(capped: Stack) -> None:
    # The front's own cap stays high: only the daemon's is at the minimum.
    front = start_front(capped, env={"LLAMON_PLAYGROUND_FRONT_MAX_CONNECTIONS": "256"})
    socks: list[socket.socket] = []
    try:
        def stream() -> Reader:
            socks.append(connect(front))
            socks[-1].sendall(request(front, f"{P}/events"))
            reader = Reader(socks[-1])
            assert reader.head()[0] == 200
            return reader

        readers = [stream() for _ in range(CAP)]
        wait_for(lambda: daemon_tcp(capped, front) == CAP, 30, "the daemon to hold its cap")
        readers.append(stream())  # answered all the same: relayed
        assert daemon_tcp(capped, front) == CAP
        socks.pop(0).close()
        readers.pop(0)
        wait_for(lambda: daemon_tcp(capped, front) == CAP - 1, 30, "a slot to free up")
        readers.append(stream())
        wait_for(lambda: daemon_tcp(capped, front) == CAP, 30, "the freed slot to be taken")
        # Lent or relayed, every stream carries what happens next.
        direct = Api.for_socket(str(capped.settings.socket_path))
        try:
            session = await direct.session()
            await direct.ok("PATCH", f"sessions/{session}", {"title": "still here"})
        finally:
            await direct.close()
        for reader in readers:
            assert b"event: session.updated" in reader.until(b'"still here"')
    finally:
        for sock in socks:
            sock.close()
