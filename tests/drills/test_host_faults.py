"""Drill: the Host killed (SIGKILL) or hung (SIGSTOP) mid-run, again and again: each run
ends with a documented reason within a bound, the Host comes back, the next run works."""

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

FAST_FAULTS = {"LLAMON_PLAYGROUND_HOST_STALL_TIMEOUT": "1", "LLAMON_PLAYGROUND_BACKOFF_BASE": "0.05"}


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


async def test_host_sigkill_mid_run(faulty: Stack, scale) -> None:  # type: ignore[no-untyped-def]
    api = Api.for_socket(str(faulty.settings.socket_path))
    rounds = scale.n(1, 10)
    try:
        session = await api.session()
        for i in range(rounds):
            run_id, pid = await _mid_run(api, session)
            os.kill(pid, signal.SIGKILL)
            run = await api.wait_status(run_id, timeout=20)  # the bound
            assert run["status"] == "failed" and run["reason"] == "host_exited"
            await _ready_again(api, run["generation"])
            nxt = await api.wait_status(await api.start_run(session, "stream alive"))
            assert nxt["status"] == "completed"
            print(f"round {i + 1}/{rounds}: Host SIGKILLed mid-run -> run failed host_exited "
                  f"in {run['duration_ms'] / 1000:.1f} s; Host back, next run completed")
    finally:
        await api.close()


async def test_host_sigstop_mid_run(faulty: Stack, scale) -> None:  # type: ignore[no-untyped-def]
    api = Api.for_socket(str(faulty.settings.socket_path))
    rounds = scale.n(1, 5)
    try:
        session = await api.session()
        for i in range(rounds):
            run_id, pid = await _mid_run(api, session)
            os.kill(pid, signal.SIGSTOP)
            try:
                run = await api.wait_status(run_id, timeout=30)  # the bound
            finally:
                try:
                    os.kill(pid, signal.SIGCONT)
                except ProcessLookupError:
                    pass
            assert run["status"] == "failed" and run["reason"] == "host_unresponsive"
            status = await _ready_again(api, run["generation"])
            assert status["pid"] != pid
            nxt = await api.wait_status(await api.start_run(session, "stream alive"))
            assert nxt["status"] == "completed"
            print(f"round {i + 1}/{rounds}: Host SIGSTOPped mid-run -> run failed "
                  f"host_unresponsive in {run['duration_ms'] / 1000:.1f} s; Host replaced, "
                  "next run completed")
    finally:
        await api.close()
