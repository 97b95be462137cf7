"""Running a test module's fronts on each transport (docs/front-transport.md).

A front reaches the daemon either way: `fast` (its own pooled client, streams lent to the
daemon) or `plain` (aiohttp's client, every answer relayed). The `front_transport` fixture
(tests/conftest.py) names the one a test's stack gives its fronts; `both_transports`
runs a test (or, as `pytestmark`, a module) once with each, and `handover_only` marks a
test about lending itself: its plain case is skipped, saying why.
"""

from __future__ import annotations

import os

import psutil
import pytest

from llamon_playground.common.config import FRONT_TRANSPORTS

ENV_FRONT_TRANSPORT = "LLAMON_PLAYGROUND_FRONT_TRANSPORT"
FAST, PLAIN = FRONT_TRANSPORTS

both_transports = pytest.mark.parametrize("front_transport", FRONT_TRANSPORTS, indirect=True)
handover_only = pytest.mark.parametrize("front_transport", [
    FAST, pytest.param(PLAIN, marks=pytest.mark.skip(
        reason="about lending a stream's connection to the daemon: a plain front lends none"))],
    indirect=True)


def transport_env(transport: str | None) -> dict[str, str]:
    """The stack's environment for `transport`; None leaves the caller's environment (and so
    the default, or what `LLAMON_PLAYGROUND_FRONT_TRANSPORT` says for the whole run)."""
    return {} if transport is None else {ENV_FRONT_TRANSPORT: transport}


def unix_sockets(pid: int) -> set[str]:
    """The process's Unix sockets, as `socket:[inode]`: a front's connections to the daemon
    are those it did not have before its first request (the loop's self-pipe is one)."""
    names = set()
    for conn in psutil.Process(pid).net_connections(kind="unix"):
        if conn.fd < 0:
            continue
        try:
            names.add(os.readlink(f"/proc/{pid}/fd/{conn.fd}"))
        except FileNotFoundError:
            pass  # closed since it was listed (what a test waiting for a close expects)
    return names
