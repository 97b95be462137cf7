"""`python stream_opener.py PORT PATH COUNT` (the bearer token in STREAM_TOKEN): COUNT
connections to 127.0.0.1:PORT at once, each asking for the SSE stream at PATH with the token.
Prints one line once every connection has its answer's status (or failed):
`<seconds to open> <status>=<n>... failed=<n>`, then holds the streams that were answered
200 open, reading and dropping what they are sent, until SIGTERM.

The hostile_door bench's 1,000 streams. A process of its own, as a browser's tabs are: opened
from the bench's own event loop, the streams' connects and reads stalled the probes beside
them, and the probe's latency measured the client's loop as much as the front.
"""

from __future__ import annotations

import errno
import os
import selectors
import signal
import socket
import sys
import time


def main(port: int, path: str, count: int) -> None:
    stopping = False

    def stop(*_: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    head = (f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            f"Authorization: Bearer {os.environ['STREAM_TOKEN']}\r\n"
            "Accept: text/event-stream\r\n\r\n").encode()
    selector = selectors.DefaultSelector()
    statuses: dict[str, int] = {}
    pending: dict[socket.socket, bytes] = {}
    started = time.perf_counter()
    for _ in range(count):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setblocking(False)
        if sock.connect_ex(("127.0.0.1", port)) not in (0, errno.EINPROGRESS):
            statuses["failed"] = statuses.get("failed", 0) + 1
            sock.close()
            continue
        pending[sock] = b""
        selector.register(sock, selectors.EVENT_WRITE)
    reported = False
    while not stopping:
        for key, mask in selector.select(0.5):
            sock = key.fileobj
            assert isinstance(sock, socket.socket)
            if mask & selectors.EVENT_WRITE:
                try:
                    if sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) != 0:
                        raise OSError("connect")
                    sock.sendall(head)
                    selector.modify(sock, selectors.EVENT_READ)
                except OSError:
                    _answered(selector, pending, statuses, sock, "failed")
                continue
            try:
                data = sock.recv(65536)
            except OSError:
                data = b""
            if sock not in pending:  # a held stream: drop what it sends, close at its end
                if not data:
                    selector.unregister(sock)
                    sock.close()
                continue
            if not data:
                _answered(selector, pending, statuses, sock, "failed")
                continue
            pending[sock] += data
            if b"\r\n" in pending[sock]:
                status = pending[sock].split(b" ", 2)[1].decode()
                _answered(selector, pending, statuses, sock, status)
        if not pending and not reported:
            reported = True
            print(f"{time.perf_counter() - started:.2f} "
                  + " ".join(f"{k}={v}" for k, v in sorted(statuses.items())), flush=True)
    for key in list(selector.get_map().values()):
        key.fileobj.close()  # type: ignore[union-attr]


def _answered(selector: selectors.BaseSelector, pending: dict[socket.socket, bytes],
              statuses: dict[str, int], sock: socket.socket, status: str) -> None:
    del pending[sock]
    statuses[status] = statuses.get(status, 0) + 1
    if status != "200":  # refused (429) or failed: nothing to hold
        selector.unregister(sock)
        sock.close()


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2], int(sys.argv[3]))
