"""Which side of the platform seam a daemon runs, said by GET /health, GET /host and
`status --json`; the portable side forced on Linux runs a Host and stops it.

The rest of the e2e tests that touch Host supervision, recovery, peer checks and the hand-over
run a second time in CI with LLAMON_PLAYGROUND_FORCE_PORTABLE=1 (docs/testing.md)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import orjson

from llamon_playground.common.platform import ENV_FORCE_PORTABLE, PORTABLE, choose
from tests.support.api import Api
from tests.support.door import cli
from tests.support.procs import Stack, stack_for


async def test_the_daemon_says_its_platform(daemon: Stack) -> None:
    expected = choose(os.environ, sys.platform).name  # what this run's environment selects
    api = Api.for_socket(str(daemon.settings.socket_path))
    try:
        assert (await api.ok("GET", "/health"))["platform"] == expected
        assert (await api.ok("GET", "host"))["platform"] == expected
    finally:
        await api.close()
    status = cli(daemon, "status", "--json", str(daemon.project))
    assert status.returncode == 0, status.stderr
    assert orjson.loads(status.stdout)["platform"] == expected


async def test_forced_portable_runs_and_stops_a_host(project: Path, runtime_base: Path) -> None:
    with stack_for(project, runtime_base, extra_env={ENV_FORCE_PORTABLE: "1"}) as s:
        s.start_daemon()
        api = Api.for_socket(str(s.settings.socket_path))
        try:
            host = await api.ok("POST", "host/start")
            assert host["platform"] == PORTABLE and host["state"] == "ready"
            stopped = await api.ok("POST", "host/stop")
            assert stopped["state"] == "stopped" and stopped["last_stop_step"] == "terminated"
        finally:
            await api.close()
