"""The daemon speaks systemd's notify protocol to a NOTIFY_SOCKET the test owns."""

from __future__ import annotations

import signal
import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.api import Api
from tests.support.procs import REPO, Proc, Stack

WATCHDOG_USEC = 200_000


@pytest.fixture
def notify(runtime_base: Path) -> Iterator[tuple[socket.socket, Path]]:
    path = runtime_base / "notify.sock"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(path))
    sock.settimeout(30)  # a bound on a blocking recv, not a sleep
    yield sock, path
    sock.close()


def receive(sock: socket.socket) -> dict[str, str]:
    data = sock.recv(4096).decode()
    return dict(line.split("=", 1) for line in data.splitlines())


def start_notified_daemon(stack: Stack, path: Path, **env: str) -> Proc:
    """A daemon under a fake systemd (the Stack stops it in teardown)."""
    if stack.daemon is not None:
        stack.remember_hosts()
        stack.daemon.stop()
    proc = Proc([sys.executable, "-m", "llamon_playground", "daemon", str(stack.project)],
                {**stack.env, "NOTIFY_SOCKET": str(path), **env},
                stack.runtime_base / "notified-daemon.log", REPO)
    stack.daemon = proc
    return proc


def health_now(stack: Stack) -> bytes:
    with socket.socket(socket.AF_UNIX) as sock:
        sock.connect(str(stack.settings.socket_path))
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: d\r\nConnection: close\r\n\r\n")
        return sock.recv(64)


async def test_ready_then_watchdog_then_stopping(stack: Stack,
                                                notify: tuple[socket.socket, Path]) -> None:
    sock, path = notify
    proc = start_notified_daemon(stack, path, WATCHDOG_USEC=str(WATCHDOG_USEC))
    ready = receive(sock)
    assert ready["READY"] == "1" and ready["MAINPID"] == str(proc.pid)
    assert health_now(stack).startswith(b"HTTP/1.1 200")  # READY means the socket answers
    pings = [receive(sock) for _ in range(3)]
    assert all(p == {"WATCHDOG": "1"} for p in pings)
    # The Host must not inherit what systemd gave the daemon.
    api = Api.for_socket(str(stack.settings.socket_path))
    try:
        host = await api.ok("POST", "host/start")
    finally:
        await api.close()
    environ = Path(f"/proc/{host['pid']}/environ").read_bytes()
    assert b"NOTIFY_SOCKET=" not in environ and b"WATCHDOG_USEC=" not in environ
    proc.signal(signal.SIGTERM)
    while (message := receive(sock)).get("WATCHDOG") == "1":
        continue
    assert message["STOPPING"] == "1"
    assert proc.wait(30) == 0


def test_no_watchdog_pings_for_another_pid(stack: Stack,
                                           notify: tuple[socket.socket, Path]) -> None:
    sock, path = notify
    proc = start_notified_daemon(stack, path, WATCHDOG_USEC=str(WATCHDOG_USEC),
                                 WATCHDOG_PID="1")
    assert receive(sock)["READY"] == "1"
    proc.signal(signal.SIGTERM)
    assert receive(sock)["STOPPING"] == "1"  # and no WATCHDOG=1 came in between
    assert proc.wait(30) == 0


async def test_ready_comes_after_boot_recovery(stack: Stack,
                                               notify: tuple[socket.socket, Path]) -> None:
    stack.start_daemon()
    api = Api.for_socket(str(stack.settings.socket_path))
    try:
        run_id = await api.start_run(await api.session(), "slow")
        async for event in api.stream(run_id):
            if event.event == "output.delta":
                break  # the run is live in the Host
    finally:
        await api.close()
    assert stack.daemon is not None
    stack.daemon.signal(signal.SIGKILL)
    stack.daemon.wait(10)
    sock, path = notify
    start_notified_daemon(stack, path)
    assert receive(sock)["READY"] == "1"
    api = Api.for_socket(str(stack.settings.socket_path))
    try:
        run = await api.run(run_id)  # asked the moment READY came: already recovered
    finally:
        await api.close()
    assert run["status"] == "interrupted" and run["reason"] == "daemon_restarted"
