"""Notifier: the notify protocol's addressing and the watchdog's interval."""

from __future__ import annotations

import logging
import os
import secrets
import socket

import pytest

from llamon_playground.daemon.sd_notify import Notifier


def test_without_notify_socket_nothing_is_sent() -> None:
    notifier = Notifier(None, watchdog_usec=1_000_000)
    assert notifier.ready("x") is False and notifier.watchdog_interval is None


def test_abstract_socket_address() -> None:
    name = "llamon-test-" + secrets.token_hex(6)
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind("\0" + name)
        sock.settimeout(5)
        assert Notifier("@" + name).stopping() is True
        assert sock.recv(100) == b"STOPPING=1\nSTATUS=stopping"


@pytest.mark.parametrize(("usec", "pid", "interval"), [
    (0, None, None), (4_000_000, None, 2.0), (4_000_000, "self", 2.0), (4_000_000, 1, None)])
def test_watchdog_interval_is_half_the_timeout_for_our_pid(usec: int, pid: object,
                                                           interval: float | None) -> None:
    watchdog_pid = os.getpid() if pid == "self" else pid
    notifier = Notifier("/run/notify", watchdog_usec=usec,
                        watchdog_pid=watchdog_pid)  # type: ignore[arg-type]
    assert notifier.watchdog_interval == interval


def test_a_gone_systemd_is_logged_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        assert Notifier("/nonexistent/notify.sock").ready("x") is False
    assert "sd_notify" in caplog.text


def test_a_full_queue_drops_pings_instead_of_blocking(caplog: pytest.LogCaptureFixture) -> None:
    # A systemd that does not read: a datagram socket's queue holds a few datagrams (ten by
    # default), after which a blocking sendto would wait for as long as nobody reads.
    name = "llamon-test-" + secrets.token_hex(6)
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind("\0" + name)
        notifier = Notifier("@" + name)
        with caplog.at_level(logging.WARNING):
            sent = [notifier.send("WATCHDOG=1", wait=0) for _ in range(2_000)]
            assert notifier.stopping() is False  # waited its bounded second, then gave up
        assert sent[0] is True and sent[-1] is False
        assert caplog.text.count("systemd is not reading") == 1  # once a spell, not a ping
        while True:  # systemd reads again: the next ping goes through
            sock.setblocking(False)
            try:
                sock.recv(100)
            except BlockingIOError:
                break
        assert notifier.send("WATCHDOG=1", wait=0) is True
