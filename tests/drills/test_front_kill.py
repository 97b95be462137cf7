"""Drill: SIGKILL the front under 20 open SSE streams; clients resume on a new front."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import aiohttp
import pytest

from tests.support.api import Api, SseEvent
from tests.support.procs import stack_for

pytestmark = pytest.mark.drill

CLIENTS = 20
WORDS = " ".join(f"w{i}" for i in range(300))


async def read(api: Api, run_id: str, got: list[list[SseEvent]], i: int,
               enough: asyncio.Event) -> None:
    """Client `i`'s stream into got[i] until the front dies; `enough` once all have 5."""
    try:
        async for ev in api.stream(run_id):
            got[i].append(ev)
            if all(len(g) >= 5 for g in got):
                enough.set()
    except (aiohttp.ClientError, OSError):  # the front died under us: that is the drill
        return


async def test_front_sigkill_during_twenty_streams(project: Path, runtime_base: Path,
                                                   scale) -> None:  # type: ignore[no-untyped-def]
    rounds = scale.n(1, 5)
    with stack_for(project, runtime_base, extra_env={"ECHO_CHUNK_DELAY_MS": "10"}) as stack:
        stack.start_daemon()
        front, url = stack.start_front()
        for round_no in range(rounds):
            first = Api.for_url(url)
            session = await first.session()
            run_id = await first.start_run(session, "stream " + WORDS)
            got: list[list[SseEvent]] = [[] for _ in range(CLIENTS)]
            enough = asyncio.Event()
            readers = [asyncio.create_task(read(first, run_id, got, i, enough))
                       for i in range(CLIENTS)]
            await asyncio.wait_for(enough.wait(), 30)
            front.signal(signal.SIGKILL)
            front.wait(10)
            await asyncio.gather(*readers)
            await first.close()
            front, url = stack.start_front()
            second = Api.for_url(url)
            try:
                rest = await asyncio.gather(*[second.events(run_id, last_event_id=g[-1].id)
                                              for g in got])
                full = await second.events(run_id)
            finally:
                await second.close()
            expected = [e.id for e in full]
            assert full[-1].data["status"] == "completed"
            for before, after in zip(got, rest, strict=True):
                assert [e.id for e in before + after] == expected
            print(f"round {round_no + 1}/{rounds}: front killed under {CLIENTS} streams; each "
                  f"client resumed on a new front and saw all {len(expected)} events once, "
                  "in order")
