"""Drill: the Host killed (SIGKILL) or hung (SIGSTOP) mid-run, again and again: each run
ends with a documented reason within a bound, the Host comes back, the next run works.

An outside SIGKILL mid-run is that run's failure, not a crash loop (the crash policy counts
only a Host that dies unasked), so ten of them in a row never reach `crashloop`."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.api import Api
from tests.support.procs import Stack, stack_for
from tests.support.waiting import host_status

pytestmark = pytest.mark.drill

FAST_FAULTS = {"LLAMON_PLAYGROUND_HOST_STALL_TIMEOUT": "1",
               "LLAMON_PLAYGROUND_BACKOFF_BASE": "0.05"}


@pytest.fixture
def faulty(project: Path, runtime_base: Path) -> Iterator[Stack]:
    with stack_for(project, runtime_base, extra_env=FAST_FAULTS) as s:
        s.start_daemon()
        yield s


async def _mid_run(api: Api, session: str) -> tuple[str, int]:
    run_id = await api.start_run(session, "slow")
    await api.first_output(run_id)
    status = await api.ok("GET", "host")
    return run_id, int(status["pid"])


async def _ready_again(api: Api, generation: int) -> dict:  # type: ignore[type-arg]
    return await host_status(api, lambda s: s["state"] == "ready" and s["generation"] > generation,
                             "the Host to come back")


FAULTS = {
    # signal: (reason the run must end with, bound in s, rounds short/long)
    "SIGKILL": (signal.SIGKILL, "host_exited", 20, (1, 10)),
    "SIGSTOP": (signal.SIGSTOP, "host_unresponsive", 30, (1, 5)),
}


@pytest.mark.parametrize("fault", FAULTS)
async def test_host_fault_mid_run(faulty: Stack, scale, fault: str) -> None:  # type: ignore[no-untyped-def]
    sig, reason, bound, (short, long) = FAULTS[fault]
    api = Api.for_socket(str(faulty.settings.socket_path))
    rounds = scale.n(short, long)
    try:
        session = await api.session()
        for i in range(rounds):
            run_id, pid = await _mid_run(api, session)
            os.kill(pid, sig)
            try:
                run = await api.wait_status(run_id, timeout=bound)
            finally:
                try:
                    os.kill(pid, signal.SIGCONT)  # a stopped Host must not linger stopped
                except ProcessLookupError:
                    pass
            assert run["status"] == "failed" and run["reason"] == reason
            status = await _ready_again(api, run["generation"])
            assert status["pid"] != pid
            nxt = await api.wait_status(await api.start_run(session, "stream alive"))
            assert nxt["status"] == "completed"
            print(f"round {i + 1}/{rounds}: Host {fault} mid-run -> run failed {reason} in "
                  f"{run['duration_ms'] / 1000:.1f} s; Host replaced, next run completed")
    finally:
        await api.close()
