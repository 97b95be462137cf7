"""What the HTTP parser refuses on the daemon's socket is answered like every other error:
`Server: llamon-playground`, a fixed JSON body, nothing of the request echoed."""

from __future__ import annotations

import socket

import pytest

from tests.support.door import send_refused
from tests.support.procs import Stack

MARK = "zq7echo"  # in every bad request, so an echo of it would show


def exchange(path: str, raw: bytes) -> bytes:
    with socket.socket(socket.AF_UNIX) as sock:
        sock.settimeout(10)
        sock.connect(path)
        return send_refused(sock, raw)


BAD = {
    "header line without a colon": f"GET /health HTTP/1.1\r\nHost: d\r\n{MARK} no colon\r\n\r\n",
    "100 KB header": f"GET /health HTTP/1.1\r\nHost: d\r\nX-{MARK}: {'a' * 100_000}\r\n\r\n",
    "20,000 headers": "GET /health HTTP/1.1\r\nHost: d\r\n"
                      + "".join(f"X-{MARK}-{i}: 1\r\n" for i in range(20_000)) + "\r\n",
    "a vertical tab in Last-Event-ID": f"GET /health HTTP/1.1\r\nHost: d\r\n"
                                       f"Last-Event-ID: 1\x0b{MARK}\r\n\r\n",
    "method post": f"post /health?{MARK} HTTP/1.1\r\nHost: d\r\n\r\n",
    "not HTTP at all": f"\x16\x03\x01{MARK}\r\n\r\n",
}


# One daemon for every request: each is refused on a connection of its own.
@pytest.mark.parametrize("raw", BAD.values(), ids=BAD.keys())
def test_a_request_the_parser_refuses_echoes_nothing(module_daemon: Stack, raw: str) -> None:
    answer = exchange(str(module_daemon.settings.socket_path), raw.encode("latin-1"))
    head, _, body = answer.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    assert 400 <= status < 500, answer[:200]
    headers = head.lower()
    assert b"\r\nserver: llamon-playground" in headers, head
    assert b"aiohttp" not in answer and b"python" not in answer.lower()
    assert MARK.encode() not in answer, "the request is not echoed"
    assert b'"detail"' in body
