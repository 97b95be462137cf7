"""The Host started with the daemon (prewarm): Ready before any run, with no run and no
history of it; the first run goes to that generation; off, the Host waits for a run."""

from __future__ import annotations

from pathlib import Path

from tests.support.api import Api
from tests.support.procs import copy_example, stack_for
from tests.support.waiting import eventually

PREWARM = {"LLAMON_PLAYGROUND_PREWARM": "1"}


async def test_the_host_is_ready_before_any_run_and_leaves_no_history(
        tmp_path: Path, runtime_base: Path) -> None:
    project = copy_example(tmp_path)
    with stack_for(project, runtime_base, extra_env=PREWARM) as stack:
        stack.start_daemon()
        api = Api.for_socket(str(stack.settings.socket_path))
        try:
            # /health is no Playground API use: it opens no history.
            health = await eventually(lambda: api.ok("GET", "/health"),
                                      lambda doc: doc["host"]["state"] == "ready",
                                      "the Host Ready")
            host = health["host"]
            # Lazy storage holds: a Host started ahead of time writes no history.
            assert health["database"] == "not_opened"
            assert not stack.settings.state_dir.exists()
            session = await api.session()
            run_id = await api.start_run(session, "stream hello")
            run = await eventually(lambda: api.ok("GET", f"runs/{run_id}"),
                                   lambda doc: doc["status"] == "completed", "the run's end")
            # The run went to the generation started ahead of it: no second start.
            assert run["generation"] == host["generation"]
        finally:
            await api.close()


async def test_without_prewarm_the_host_waits_for_a_run(tmp_path: Path,
                                                       runtime_base: Path) -> None:
    project = copy_example(tmp_path)
    with stack_for(project, runtime_base, extra_env={"LLAMON_PLAYGROUND_PREWARM": "0"}) as stack:
        stack.start_daemon()
        api = Api.for_socket(str(stack.settings.socket_path))
        try:
            assert (await api.ok("GET", "/health"))["host"]["state"] == "stopped"
        finally:
            await api.close()
