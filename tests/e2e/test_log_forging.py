"""Log lines cannot be forged, and malformed requests write no tracebacks: control
characters in any logged value are escaped, and every line of a record after its first
starts with whitespace, so nothing a client sends can start a line of its own."""

from __future__ import annotations

import re
import socket

from tests.support.door import raw_request, start_front
from tests.support.procs import Stack

FORGED = "WARNING daemon.app: forged"
RECORD_START = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} [A-Z]+ ")


def send_raw(port: int, data: bytes) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(data)
        sock.shutdown(socket.SHUT_WR)
        while sock.recv(65536):
            pass


def test_a_client_cannot_start_a_log_line_nor_cause_a_traceback(stack: Stack) -> None:
    stack.start_daemon()
    front = start_front(stack, global_args=("-v",))
    port = front.port
    # No token needed: a web page's no-cors fetch can send this.
    raw_request(port, f"GET /api/playground/v1/x%0a{FORGED.replace(' ', '%20')}%0d%0a HTTP/1.1\r\n"
                      f"Host: 127.0.0.1:{port}\r\n\r\n".encode())
    raw_request(port, f"GET /x\x1b[2J%0aB HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
    for malformed in (b"GARBAGE\r\n\r\n", b"GET / HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n",
                      b"GET / HTTP/9.9\r\n\r\n", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03",
                      b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n",
                      b"GET /\x00 HTTP/1.1\r\nHost: x\r\n\r\n"):
        send_raw(port, malformed)
    front.proc.stop()
    assert stack.daemon is not None
    stack.daemon.stop()
    for who, text in (("front", front.proc.output()), ("daemon", stack.daemon.output())):
        lines = text.splitlines()
        assert who == "daemon" or any("forged" in ln for ln in lines), text  # escaped
        assert not [ln for ln in lines if "forged" in ln and not RECORD_START.match(ln)], text
        assert " ERROR " not in text and "Traceback" not in text, (who, text)
