"""`python reconnect_flood.py PORT COUNT`: COUNT TCP connections to 127.0.0.1:PORT at once,
each sending the first bytes of a request head (never the rest) and opened again the moment
the front closes it (non-blocking: a connect the kernel holds back stalls only its own
socket), until SIGTERM; then prints how many were opened and how many failed. Past the
front's cap, each new one makes the front close an older one, whose socket reconnects at
once: the front's churn runs as fast as the front can close and accept. The
hostile_inputs bench's reconnect flood (standard library only: it also runs under another
uid with the system Python, its text passed with -c)."""

from __future__ import annotations

import errno
import selectors
import signal
import socket
import sys

PARTIAL_HEAD = b"GET /health HTTP/1.1\r\nHo"


def main(port: int, count: int) -> None:
    stopping = False

    def stop(*_: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    selector = selectors.DefaultSelector()
    opened = failed = 0

    def connect() -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setblocking(False)
        code = sock.connect_ex(("127.0.0.1", port))
        if code not in (0, errno.EINPROGRESS):
            sock.close()
            raise OSError(code, "connect")
        selector.register(sock, selectors.EVENT_WRITE)

    for _ in range(count):
        connect()
    while not stopping:
        for key, mask in selector.select(1.0):
            sock = key.fileobj
            assert isinstance(sock, socket.socket)
            if mask & selectors.EVENT_WRITE:  # connected (or failed to)
                if sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0:
                    try:
                        sock.send(PARTIAL_HEAD)
                        opened += 1
                        selector.modify(sock, selectors.EVENT_READ)
                        continue
                    except OSError:
                        pass
                failed += 1
            # Closed by the front (EOF, a reset or an answer), or never connected: again.
            selector.unregister(sock)
            sock.close()
            while not stopping:
                try:
                    connect()
                    break
                except OSError:
                    failed += 1
    print(f"{opened} {failed}", flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
