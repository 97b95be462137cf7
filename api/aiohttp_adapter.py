"""The one module of the product that relies on aiohttp beyond its public API.

The fast transport (docs/front-transport.md) needs two things aiohttp does not offer
publicly:
- passing the daemon's chunked answer on with its chunk framing as it came
  (`pass_chunks_through`): aiohttp's response writer would frame every write again, so its
  `StreamWriter.chunked` (from `aiohttp.http_writer`) is turned off once the head is sent;
- an answer written by another process on the client's connection (`AnsweredElsewhere`, a
  stream lent to the daemon): aiohttp's connection handler must write nothing and then go on
  serving the connection, which holds because it calls `prepare()` and `write_eof()` of the
  handler's response and reads `keep_alive` from it, and no more.

A new aiohttp release may change either. So at the front's start, `self_test` checks that
the names exist and that they behave, on a real aiohttp server over a socket pair: a
chunked answer passed through arrives framed once, and after an answer written elsewhere
the connection serves the next request. When it fails, the front runs its `plain`
transport (aiohttp's client, every answer relayed: nothing here is used) and says so in
one warning line (`choose_transport`). A test keeps every other module of the product off
aiohttp's private names (tests/unit/api/test_aiohttp_private.py).
"""

from __future__ import annotations

import asyncio
import logging
import socket

import aiohttp
from aiohttp import web

log = logging.getLogger(__name__)

SELF_TEST_TIMEOUT = 2.0  # seconds; it takes a few milliseconds
_FRAMED = b"3\r\nabc\r\n0\r\n\r\n"  # one chunk and the last, as the daemon frames them
_ELSEWHERE = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"


class SelfTestFailed(Exception):
    """What aiohttp no longer does as the fast transport needs."""


def pass_chunks_through(writer: object) -> None:
    """The prepared response's writer sends the bytes it is given as they are: the caller
    writes whole chunks, framing included (the response's head already says chunked)."""
    from aiohttp.http_writer import StreamWriter  # not a public module: only here

    if not isinstance(writer, StreamWriter) or not writer.chunked:
        raise RuntimeError("a chunked answer for a client that takes no chunks")
    writer.chunked = False


class AnsweredElsewhere(web.StreamResponse):
    """The answer was written on the connection by someone else (the daemon, on a lent
    connection): aiohttp writes nothing, and keeps the connection only when `keep_alive`."""

    def __init__(self, status: int, keep_alive: bool) -> None:
        super().__init__(status=status)
        self._kept = keep_alive

    async def prepare(self, request: web.BaseRequest) -> None:
        return None

    async def write_eof(self, data: bytes = b"") -> None:
        return None

    @property
    def keep_alive(self) -> bool:
        return self._kept


async def _serve_test(request: web.BaseRequest) -> web.StreamResponse:
    if request.path == "/chunks":
        response = web.StreamResponse()
        response.enable_chunked_encoding()
        pass_chunks_through(await response.prepare(request))
        await response.write(_FRAMED)
        await response.write_eof()
        return response
    if request.path == "/elsewhere":
        assert request.transport is not None
        request.transport.write(_ELSEWHERE)
        return AnsweredElsewhere(200, keep_alive=True)
    return web.Response(text="after")


async def _exchange(client: socket.socket, path: str, until: bytes) -> bytes:
    loop = asyncio.get_running_loop()
    await loop.sock_sendall(client, f"GET {path} HTTP/1.1\r\nHost: t\r\n\r\n".encode())
    got = b""
    while until not in got:
        data = await loop.sock_recv(client, 65536)
        if not data:
            raise SelfTestFailed(f"the connection closed during GET {path}: {got!r}")
        got += data
    return got


def _check_names() -> None:
    """The names this module relies on exist (before anything is served with them)."""
    try:
        from aiohttp.http_writer import StreamWriter
    except ImportError as exc:
        raise SelfTestFailed(f"aiohttp.http_writer.StreamWriter: {exc}") from exc
    if not isinstance(getattr(StreamWriter, "chunked", None), bool):
        raise SelfTestFailed("aiohttp.http_writer.StreamWriter has no `chunked` flag")


async def self_test() -> None:
    """Check that what this module relies on exists and behaves; SelfTestFailed if not."""
    _check_names()
    loop = asyncio.get_running_loop()
    # Its own logger: what goes wrong in the test is said once, by choose_transport.
    quiet = logging.getLogger(f"{__name__}.self_test")
    quiet.propagate = False
    quiet.addHandler(logging.NullHandler())
    server = web.Server(_serve_test, access_log=None, logger=quiet)
    ours, client = socket.socketpair()
    try:
        ours.setblocking(False)
        client.setblocking(False)
        await loop.connect_accepted_socket(server, ours)
        async with asyncio.timeout(SELF_TEST_TIMEOUT):
            chunked = await _exchange(client, "/chunks", b"0\r\n\r\n")
            head, _, body = chunked.partition(b"\r\n\r\n")
            if b"transfer-encoding: chunked" not in head.lower() or body != _FRAMED:
                raise SelfTestFailed(f"a chunked answer passed through came as {chunked!r}")
            elsewhere = await _exchange(client, "/elsewhere", b"ok")
            if elsewhere != _ELSEWHERE:
                raise SelfTestFailed(f"an answer written elsewhere came as {elsewhere!r}")
            if not (await _exchange(client, "/after", b"after")).endswith(b"after"):
                raise SelfTestFailed("the connection served nothing after")
    except (AttributeError, ImportError, RuntimeError, TypeError, TimeoutError) as exc:
        raise SelfTestFailed(f"{type(exc).__name__}: {exc}") from exc
    finally:
        client.close()
        await server.shutdown(0.1)


async def choose_transport(asked: str) -> str:
    """The transport the front runs: `asked`, unless it is the fast one and the self-test
    fails, then `plain` with one warning line saying why."""
    if asked != "fast":
        return asked
    try:
        await self_test()
    except SelfTestFailed as exc:
        log.warning("front transport: plain, not fast: aiohttp %s does not behave as the "
                    "fast transport needs (%s)", aiohttp.__version__, exc)
        return "plain"
    return asked
