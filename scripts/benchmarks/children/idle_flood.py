"""`python -m scripts.benchmarks.children.idle_flood PORT COUNT`: hold COUNT TCP connections to
127.0.0.1:PORT that send nothing, each closed and opened again in turn (each once a
second), until SIGTERM; then print how many were opened and how many the other
side had closed first (the hostile_inputs bench's idle flood)."""

from __future__ import annotations

import select
import signal
import socket
import sys
import time


def main(port: int, count: int) -> None:
    stopping = False

    def stop(*_: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    socks: list[socket.socket | None] = [None] * count
    opened = closed_by_peer = failed = 0
    while not stopping:
        for i in range(count):
            if stopping:
                break
            old = socks[i]
            if old is not None:
                if select.select([old], [], [], 0)[0]:
                    closed_by_peer += 1  # readable: EOF, a reset or a 503
                old.close()
            try:
                socks[i] = socket.create_connection(("127.0.0.1", port), timeout=5)
                opened += 1
            except OSError:
                socks[i] = None
                failed += 1
            time.sleep(1 / count)  # the pace of the flood, not a wait for anything
    for sock in socks:
        if sock is not None:
            sock.close()
    print(f"{opened} {closed_by_peer} {failed}", flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
