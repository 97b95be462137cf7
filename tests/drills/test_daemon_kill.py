"""Drill: SIGKILL the daemon at random points (run creation, mid-stream, a run's ending,
Host restart, import), again and again, always with a Host up: nothing acknowledged is
lost, what clients received is what is stored, every run's row agrees with its events."""

from __future__ import annotations

import asyncio
import random
import signal
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.drills.checks import check_database, check_no_temp_blobs
from tests.support.api import Api, SseEvent
from tests.support.procs import stack_for, still_running

pytestmark = pytest.mark.drill

WORDS = " ".join(f"w{i}" for i in range(400))


@dataclass
class Seen:
    """What clients were told: every event received (id and content, per run), and every
    create and import the daemon acknowledged."""

    events: dict[str, list[SseEvent]] = field(default_factory=dict)
    runs: set[str] = field(default_factory=set)
    imported_sessions: set[str] = field(default_factory=set)

    def ids(self) -> dict[str, list[int]]:
        return {run_id: [e.id for e in evs] for run_id, evs in self.events.items()}


async def _creating(api: Api, session: str, seen: Seen, rng: random.Random) -> None:
    body = {"parts": [{"kind": "text", "text": "stream " + WORDS}]}

    async def create() -> None:
        code, doc = await api.call("POST", f"sessions/{session}/runs", body)
        if code == 202:
            seen.runs.add(doc["run_id"])
    await asyncio.gather(*[create() for _ in range(5)], return_exceptions=True)


async def _follow(api: Api, run_id: str, seen: Seen, until: Any) -> None:
    events = seen.events.setdefault(run_id, [])
    async for ev in api.stream(run_id):
        events.append(ev)
        if until(ev, events):
            return


async def _streaming(api: Api, session: str, seen: Seen, rng: random.Random) -> None:
    run_id = await api.start_run(session, "stream " + WORDS)
    seen.runs.add(run_id)
    stop_after = rng.randint(5, 300)
    await _follow(api, run_id, seen, lambda ev, events: len(events) >= stop_after)


async def _ending(api: Api, session: str, seen: Seen, rng: random.Random) -> None:
    """The kill lands 0-4 ms after the Host said it is done: in the run's ending."""
    run_id = await api.start_run(session, "stream a few words")
    seen.runs.add(run_id)
    await _follow(api, run_id, seen, lambda ev, events: ev.event == "run.phase" and (
        ev.data["phase"], ev.data["state"]) == ("send", "completed"))
    await asyncio.sleep(rng.uniform(0, 0.004))  # where the kill lands, not a wait


async def _restarting(api: Api, session: str, seen: Seen, rng: random.Random) -> None:
    await asyncio.wait_for(api.call("POST", "host/restart"), rng.uniform(0.01, 0.3))


async def _importing(api: Api, session: str, seen: Seen, rng: random.Random) -> None:
    await api.wait_status(await api.start_run(session, "data"))  # a run with a blob
    # This round's session only: exporting all history would double it at each import.
    bundle = await api.ok("POST", "bundles/export", {"session_ids": [session]})
    for _ in range(5):  # keep importing until the kill lands in one
        answer = await api.ok("POST", "bundles/import", {"bundle": bundle}, 201)
        seen.imported_sessions.update(answer["sessions"].values())


POINTS = {"run creation": _creating, "mid-stream": _streaming, "run end": _ending,
          "Host restart": _restarting, "import": _importing}


async def check_seen(api: Api, seen: Seen) -> None:
    """Every acknowledged create and import is there, and what each client received is a
    prefix of what is stored, content included."""
    for run_id in seen.runs:
        assert (await api.call("GET", f"runs/{run_id}"))[0] == 200, f"run {run_id} lost"
    for session_id in seen.imported_sessions:
        code, _ = await api.call("GET", f"sessions/{session_id}/runs")
        assert code == 200, f"imported session {session_id} lost"
    for run_id, received in seen.events.items():
        stored = await api.events(run_id)
        assert [(e.id, e.event, e.data) for e in stored[:len(received)]] == [
            (e.id, e.event, e.data) for e in received], f"run {run_id}: received != stored"


async def test_daemon_sigkill_at_random_points(project: Path, runtime_base: Path, scale,
                                               rng: random.Random) -> None:  # type: ignore[no-untyped-def]
    rounds = scale.n(5, 25)
    seen = Seen()
    env = {"ECHO_CHUNK_DELAY_MS": "2"}
    with stack_for(project, runtime_base, extra_env=env) as stack:
        stack.start_daemon()
        for i in range(rounds):
            # Each round kills the daemon the last one's checks ran on: a recovered one.
            api = Api.for_socket(str(stack.settings.socket_path))
            name = list(POINTS)[i % len(POINTS)]
            try:
                session = await api.session()
                await api.ok("POST", "host/start")  # the kill finds a Host to take along
                try:
                    await asyncio.wait_for(POINTS[name](api, session, seen, rng),
                                           rng.uniform(0.05, 2.0))
                except TimeoutError:
                    pass  # the kill lands wherever the work had got to
                hosts = stack.daemon.descendants()  # type: ignore[union-attr]
                assert hosts, f"round {i} ({name}): no Host to take along"
                stack.daemon.signal(signal.SIGKILL)  # type: ignore[union-attr]
                stack.daemon.wait(10)  # type: ignore[union-attr]
            finally:
                await api.close()
            assert not still_running(hosts, 10), f"round {i} ({name}): Host outlived its daemon"
            stack.start_daemon()  # boot recovery runs here
            figures = check_database(stack.settings.db_path, seen.ids())
            check_no_temp_blobs(stack.settings.files_dir)
            api = Api.for_socket(str(stack.settings.socket_path))
            try:
                await check_seen(api, seen)
            finally:
                await api.close()
            print(f"round {i + 1}/{rounds}: killed during {name}; after restart "
                  f"integrity ok, {figures['runs']} runs all terminal and matching their "
                  f"events, {figures['events']} events; {len(seen.runs)} acknowledged runs "
                  f"and {len(seen.imported_sessions)} imported sessions there; every "
                  f"client's events a prefix of the stored ones, content included")
