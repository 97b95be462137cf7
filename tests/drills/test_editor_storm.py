"""Drill: an editor storm during a run: at most one restart per quiet period."""

from __future__ import annotations

import asyncio
import gc
import itertools
import random
import time
from pathlib import Path

import pytest

from tests.support.api import Api
from tests.support.procs import stack_for
from tests.support.waiting import watcher_settled

pytestmark = pytest.mark.drill
MARGIN = 0.01  # the watcher times events as they reach it, a few ms after the write


def storm_splits(written: list[float], shortest: float, longest: float) -> list[float]:
    """The pauses between two saves of watched files long enough to end a burst (host_manager.watch.watcher's
    QuietPeriod: `shortest` plus the burst's age so far, at most `longest`)."""
    splits = []
    start = written[0]
    for before, after in itertools.pairwise(written):
        quiet = max(shortest, min(longest, shortest + before - start))
        if after - before > quiet - MARGIN:
            splits.append(round(after - before, 3))
            start = after
    return splits


async def test_two_hundred_saves_in_two_seconds(project: Path, runtime_base: Path, scale,
                                                rng: random.Random) -> None:  # type: ignore[no-untyped-def]
    saves = scale.n(200, 1000)
    # The default quiet period (short for one save, growing with a burst) must hold a storm.
    with stack_for(project, runtime_base) as stack:
        stack.start_daemon()
        api = Api.for_socket(str(stack.settings.socket_path))
        try:
            session = await api.session()
            first = await api.wait_status(await api.start_run(session, "stream warm"))
            run_id = await api.start_run(session, "slow")
            await api.first_output(run_id)
            watched = [stack.project / "app" / "agent.py", stack.project / "app" / "extra.py"]
            unwatched = [stack.project / "notes.txt", stack.project / ".venv" / "x.py",
                         stack.project / "app" / "__pycache__" / "y.pyc"]
            for path in unwatched:
                path.parent.mkdir(parents=True, exist_ok=True)
            started = time.monotonic()
            written: list[float] = []
            gc.disable()  # a collection of this process's heap must not pause the storm
            try:
                for i in range(saves):
                    target = rng.choice(watched + unwatched)
                    with open(target, "a") as fh:
                        fh.write(f"# save {i}\n")
                    if target in watched:  # only these are a burst's changes
                        written.append(time.monotonic())
                    # Spread the saves over ~2 s, closer together than the shortest quiet.
                    await asyncio.sleep(max(0.0, started + 2.0 * (i + 1) / saves
                                            - time.monotonic()))
            finally:
                gc.enable()
            # This process can still be descheduled between two saves on a loaded machine,
            # and a run of saves to unwatched files is a pause in the burst too (early in a
            # storm, a few of them outlast the shortest quiet period); a pause between two
            # watched saves longer than the quiet period at that point ends the storm there,
            # and the watcher may then rightly restart once more for what follows.
            splits = storm_splits(written, stack.settings.watch_quiet,
                                  stack.settings.watch_quiet_max)
            run = await api.wait_status(run_id, timeout=30)
            assert run["status"] == "failed" and run["reason"] == "runtime_restarted"
            status = await watcher_settled(api, stack.project / "app" / "__init__.py")
            restarts = status["watch"]["restarts"]
            assert 1 <= restarts <= 1 + len(splits), (status, splits)
            assert status["generation"] == first["generation"] + restarts
            clean = await api.wait_status(await api.start_run(session, "stream clean"))
            assert clean["status"] == "completed"
            print(f"{saves} saves in {time.monotonic() - started:.1f} s across watched and "
                  f"unwatched files: {restarts} restart(s) ({len(splits)} pause(s) of the "
                  "writer past the quiet period), the run ended runtime_restarted once, the "
                  "next run completed")
        finally:
            await api.close()
