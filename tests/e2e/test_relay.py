"""The front's relay to the daemon: kept-alive connections, the daemon's answers passed on
whole, a slow client held back rather than buffered, and a daemon that restarts (or closes
a kept-alive connection) under the pool. Each test runs on both transports
(api/relay.py with api/upstream.py, and api/plain.py)."""

from __future__ import annotations

import asyncio
import os
import socket
from dataclasses import dataclass

import orjson
import pytest

from tests.e2e.data_support import finished_run, inline_file, post_big, sha, text
from tests.support.api import Api
from tests.support.door import Front, P, read_answer, start_front
from tests.support.procs import Stack
from tests.support.transports import both_transports, unix_sockets
from tests.support.waiting import wait_for

pytestmark = both_transports


@dataclass
class Relay:
    front: Front
    own: set[str]  # the Unix sockets it had before its first request (the loop's self-pipe)

    def upstream(self) -> set[str]:
        """Its connections to the daemon."""
        return unix_sockets(self.front.proc.pid) - self.own


@pytest.fixture(scope="module")
def relay(door_stack: Stack) -> Relay:
    """A front of this module's own: which connections it holds is these tests' business."""
    front = start_front(door_stack)
    return Relay(front, unix_sockets(front.proc.pid))


@pytest.fixture(scope="module")
def front(relay: Relay) -> Front:
    return relay.front


def raw_exchange(front: Front, request: bytes, rcvbuf: int | None = None) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.settimeout(30)
    sock.connect(("127.0.0.1", front.port))
    sock.sendall(request)
    return sock


def read_to_close(sock: socket.socket, size: int = 65536) -> bytes:
    data = bytearray()
    while chunk := sock.recv(size):
        data += chunk
    return bytes(data)


def dechunk(body: bytes) -> bytes:
    out = bytearray()
    while True:
        size_line, _, body = body.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            return bytes(out)
        out += body[:size]
        assert body[size:size + 2] == b"\r\n"
        body = body[size + 2:]


async def test_requests_share_one_kept_alive_daemon_connection(relay: Relay) -> None:
    async with relay.front.session() as http:
        for _ in range(3):
            async with http.get("/health") as resp:
                assert resp.status == 200
        first = relay.upstream()
        for i in range(20):
            async with http.request("GET" if i % 2 else "POST", f"{P}/sessions",
                                    json={} if i % 2 == 0 else None) as resp:
                assert resp.status in (200, 201), await resp.text()
    assert len(first) == 1
    assert relay.upstream() == first  # the same connection, every time


async def test_sse_goes_out_with_the_daemons_framing(door_stack: Stack, front: Front) -> None:
    """HTTP/1.1: chunked; HTTP/1.0: unchunked, to the close. Either way the events are the
    daemon's own bytes (its chunks as they were on the fast transport, which lends the
    stream; chunked again by the plain one)."""
    direct = Api.for_socket(str(door_stack.settings.socket_path))
    try:
        session = await direct.session()
        run = await finished_run(direct, session, [text("stream some words to replay")])
        async with direct.http.get(f"{P}/runs/{run['id']}/events") as resp:
            want = await resp.read()
    finally:
        await direct.close()
    path = f"{P}/runs/{run['id']}/events"
    auth = f"Host: 127.0.0.1:{front.port}\r\nAuthorization: Bearer {front.token}\r\n"
    with raw_exchange(front, f"GET {path} HTTP/1.1\r\n{auth}Connection: close\r\n\r\n"
                      .encode()) as sock:
        head, _, body = read_to_close(sock).partition(b"\r\n\r\n")
    assert b"transfer-encoding: chunked" in head.lower()
    assert dechunk(body) == want
    with raw_exchange(front, f"GET {path} HTTP/1.0\r\n{auth}\r\n".encode()) as sock:
        head, _, body = read_to_close(sock).partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.0 200") and b"chunked" not in head.lower()
    assert body == want
    # Through the front with a cursor (Last-Event-ID) too.
    api = Api.for_url(front.url, front.token)
    try:
        events = await api.events(run["id"])
        rest = await api.events(run["id"], last_event_id=events[2].id)
        assert [e.id for e in rest] == [e.id for e in events[3:]]
    finally:
        await api.close()


async def test_a_slow_download_holds_the_front_to_a_bounded_buffer(door_stack: Stack,
                                                                  relay: Relay) -> None:
    """A client that reads a 9 MB file a few kB at a time: the front stops reading the
    daemon while its buffers are full instead of holding the file; a client that leaves
    mid-answer closes the front's connection to the daemon."""
    payload = os.urandom(9 * 1024 * 1024)
    direct = Api.for_socket(str(door_stack.settings.socket_path))
    try:
        session = await direct.session()
        status, doc = await post_big(direct, f"sessions/{session}/runs", {
            "parts": [text("keep this file"), inline_file(payload)]})
        assert status == 202, doc
    finally:
        await direct.close()
    slow = relay.front
    peak_before = peak_rss(slow.proc.pid)
    request = (f"GET {P}/files/{sha(payload)} HTTP/1.1\r\nHost: 127.0.0.1:{slow.port}\r\n"
               f"Authorization: Bearer {slow.token}\r\n").encode()
    with raw_exchange(slow, request + b"Connection: close\r\n\r\n", rcvbuf=4096) as sock:
        answer = read_to_close(sock, 4096)
    assert answer.startswith(b"HTTP/1.1 200") and answer.endswith(payload[-4096:])
    head = answer.partition(b"\r\n\r\n")[0].lower()
    assert b"x-content-type-options: nosniff" in head  # the daemon's, relayed
    assert b"content-security-policy: sandbox" in head
    assert len(answer.partition(b"\r\n\r\n")[2]) == len(payload)
    assert peak_rss(slow.proc.pid) - peak_before < len(payload) // 3
    # Leaving mid-answer: the front drops that connection to the daemon (it never goes
    # back to the pool half read), and keeps serving.
    sock = raw_exchange(slow, request + b"\r\n", rcvbuf=4096)
    assert sock.recv(4096).startswith(b"HTTP/1.1 200")
    busy = relay.upstream()  # mid-answer: the download's connection is open
    assert busy
    sock.close()
    wait_for(lambda: not (relay.upstream() & busy), 10,
             "the front to close the abandoned download's connection")
    with raw_exchange(slow, f"GET /health HTTP/1.1\r\nHost: 127.0.0.1:{slow.port}\r\n"
                      f"Authorization: Bearer {slow.token}\r\nConnection: close\r\n\r\n"
                      .encode()) as sock:
        assert read_answer(sock).status == 200


def peak_rss(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


async def test_a_daemon_restart_under_pooled_connections(daemon: Stack) -> None:
    """The pool's connections die with the daemon; the next requests (a POST among them)
    reconnect to the new one instead of failing on a dead connection."""
    _, url = daemon.start_front()
    api = Api.for_url(url)
    try:
        await asyncio.gather(*(api.ok("GET", "sessions") for _ in range(4)))
        assert daemon.daemon is not None
        daemon.daemon.stop()
        daemon.start_daemon()
        session = await api.session()
        assert any(s["id"] == session for s in (await api.ok("GET", "sessions"))["sessions"])
    finally:
        await api.close()


async def closing_daemon(stack: Stack) -> asyncio.AbstractServer:
    """A stand-in daemon (a fault no real one causes on demand): it answers the first
    request of each connection and keeps it alive, then closes it on the second request
    without answering, as a daemon does whose keep-alive timeout fires just as a request
    arrives."""
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await reader.readuntil(b"\r\n\r\n")  # a bodiless GET
            body = orjson.dumps({"sessions": [], "next_after": None})
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                         b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
            await writer.drain()
            await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        writer.close()
    return await asyncio.start_unix_server(handle, str(stack.settings.socket_path))


async def test_a_kept_alive_connection_closed_under_a_request(stack: Stack) -> None:
    """A GET is sent again on a fresh connection; a POST is not (the daemon may have acted
    on it): 503 daemon_unavailable."""
    front = start_front(stack)  # before the stand-in: the front makes the runtime dir
    server = await closing_daemon(stack)
    try:
        async with front.session() as http:
            for method in ("GET", "GET", "POST"):
                async with http.request(method, f"{P}/sessions",
                                        json={} if method == "POST" else None) as resp:
                    doc = await resp.json()
                    if method == "GET":
                        assert resp.status == 200, doc
                    else:
                        assert resp.status == 503, doc
                        assert doc["detail"]["error"] == "daemon_unavailable"
    finally:
        server.close()
        await server.wait_closed()


def test_a_header_that_is_not_utf8_reaches_the_daemon_unusable_not_empty(front: Front) -> None:
    """Bytes that are not UTF-8 in a relayed header: the daemon refuses the cursor, as it
    refuses any other that is not a number, instead of seeing no header at all (aiohttp's
    client drops such a value; the plain transport sends it as U+FFFD)."""
    for value in (b"\x84", b"12\xff"):
        request = (f"GET {P}/host/logs?after=0&limit=1 HTTP/1.1\r\nHost: 127.0.0.1:{front.port}"
                   f"\r\nAuthorization: Bearer {front.token}\r\nConnection: close\r\n"
                   ).encode() + b"Last-Event-ID: " + value + b"\r\n\r\n"
        with raw_exchange(front, request) as sock:
            answer = read_answer(sock)
        assert answer.status == 400, (value, answer)
        assert orjson.loads(answer.body)["detail"]["error"] == "invalid_cursor"
