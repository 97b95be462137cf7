"""Running a test module's fronts on each transport (docs/front-transport.md).

A front reaches the daemon either way: `fast` (its own pooled client, streams lent to the
daemon) or `plain` (aiohttp's client, every answer relayed). The `front_transport` fixture
(tests/conftest.py) names the one a test's stack gives its fronts. `both_transports` marks
the relay, stream and door tests: the suite runs them on the transport the environment
names (`LLAMON_PLAYGROUND_FRONT_TRANSPORT`, the default `fast` when unset), and CI runs
them once more with `plain` (`.ci/plain-tests`), which keeps the whole suite's time down;
`LLAMON_TEST_BOTH_TRANSPORTS=1` runs each both ways in one run instead. `handover_only`
marks a test about lending itself: with `plain` it is skipped, saying why.
"""

from __future__ import annotations

import os

import psutil
import pytest

from llamon_playground.common.config import FRONT_TRANSPORTS

ENV_FRONT_TRANSPORT = "LLAMON_PLAYGROUND_FRONT_TRANSPORT"
FAST, PLAIN = FRONT_TRANSPORTS

ENV_BOTH = "LLAMON_TEST_BOTH_TRANSPORTS"
NO_LENDING = "about lending a stream's connection to the daemon: a plain front lends none"


def effective_transport(transport: str | None) -> str:
    """The transport a stack's fronts run: the one given, else the environment's."""
    return transport or os.environ.get(ENV_FRONT_TRANSPORT) or FAST


def _transports() -> list[str | None]:
    """Each run's transports: both when asked, else the environment's (None)."""
    return list(FRONT_TRANSPORTS) if os.environ.get(ENV_BOTH) else [None]


both_transports = pytest.mark.parametrize("front_transport", _transports(), indirect=True)
handover_only = pytest.mark.parametrize("front_transport", [
    pytest.param(t, marks=pytest.mark.skip(reason=NO_LENDING))
    if effective_transport(t) == PLAIN else t
    for t in _transports()], indirect=True)


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
