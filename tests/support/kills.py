"""A daemon SIGKILLed in the middle of a run, as the recovery tests and drills need it."""

from __future__ import annotations

import signal

import psutil

from tests.support.api import Api
from tests.support.procs import Stack


async def sigkill_mid_run(stack: Stack) -> tuple[str, str, list[psutil.Process]]:
    """Start a `slow` run, wait for its first output, SIGKILL the daemon and reap it:
    (session id, run id, the Host processes the daemon had)."""
    assert stack.daemon is not None
    api = Api.for_socket(str(stack.settings.socket_path))
    try:
        session = await api.session()
        run_id = await api.start_run(session, "slow")
        await api.first_output(run_id)
    finally:
        await api.close()
    hosts = stack.daemon.descendants()
    stack.remember_hosts()
    stack.daemon.signal(signal.SIGKILL)
    stack.daemon.wait(10)
    return session, run_id, hosts
