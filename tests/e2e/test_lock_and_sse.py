"""The project-wide run lock and the SSE replay/live hand-over."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from tests.support.api import Api
from tests.support.door import running_daemon
from tests.support.procs import Stack
from tests.support.transports import both_transports, transport_env

pytestmark = both_transports  # every test on each of the front's transports

MANY_WORDS = " ".join(f"w{i}" for i in range(300))


# The tests without `slow_chunks` share the module's plain daemon, each in its own session.
async def test_fifty_concurrent_creates_give_one_202(module_api: Api) -> None:
    api = module_api
    session = await api.session()
    body = {"parts": [{"kind": "text", "text": "slow"}]}
    answers = await asyncio.gather(*[api.call("POST", f"sessions/{session}/runs", body)
                                     for _ in range(50)])
    accepted = [doc for code, doc in answers if code == 202]
    conflicts = [doc for code, doc in answers if code == 409]
    assert len(accepted) == 1 and len(conflicts) == 49
    winner = accepted[0]["run_id"]
    for doc in conflicts:
        assert doc["detail"]["error"] == "active_run_conflict"
        assert doc["detail"]["active_run_id"] == winner
    runs = (await api.ok("GET", f"sessions/{session}/runs"))["runs"]
    assert [r["id"] for r in runs] == [winner]
    assert (await api.ok("DELETE", f"runs/{winner}"))["status"] == "cancelled"


@pytest.fixture(scope="module")
def slow_chunks(tmp_path_factory: pytest.TempPathFactory,
                front_transport: str | None) -> Iterator[Stack]:
    """A daemon whose Host streams a chunk every 5 ms, so a run lasts long enough to cut;
    shared by the module's tests, each reading its own run to its end."""
    env = {"ECHO_CHUNK_DELAY_MS": "5", **transport_env(front_transport)}
    yield from running_daemon(tmp_path_factory, "sse", env)


async def _front(stack: Stack) -> Api:
    _, url = stack.start_front()
    return Api.for_url(url)


@pytest.mark.parametrize("how", ["last_event_id", "after", "both"])
async def test_reconnect_mid_run_sees_every_event_once_in_order(slow_chunks: Stack,
                                                                how: str) -> None:
    api = await _front(slow_chunks)
    try:
        session = await api.session()
        run_id = await api.start_run(session, "stream " + MANY_WORDS)
        first = await api.events(run_id, limit=20)
        cursor = first[-1].id
        if how == "last_event_id":
            rest = await api.events(run_id, last_event_id=cursor)
        elif how == "after":
            rest = await api.events(run_id, after=cursor)
        else:  # the larger cursor wins
            rest = await api.events(run_id, after=cursor, last_event_id=cursor - 5)
        full = await api.events(run_id)
        assert [e.id for e in first + rest] == [e.id for e in full]
        assert [e.data for e in first + rest] == [e.data for e in full]
        assert full[-1].data["status"] == "completed"
        deltas = "".join(e.data["text"] for e in full if e.event == "output.delta")
        assert deltas == MANY_WORDS
    finally:
        await api.close()


async def test_many_concurrent_readers_each_get_everything(slow_chunks: Stack) -> None:
    api = await _front(slow_chunks)
    try:
        session = await api.session()
        run_id = await api.start_run(session, "stream " + MANY_WORDS)
        readers = await asyncio.gather(*[api.events(run_id) for _ in range(20)])
        replay = await api.events(run_id)
        for got in readers:
            assert [e.id for e in got] == [e.id for e in replay]
    finally:
        await api.close()


async def test_replay_of_a_finished_run_then_stream_closes(module_api: Api) -> None:
    api = module_api
    session = await api.session()
    run_id = await api.start_run(session, "stream x y z")
    live = await api.events(run_id)
    replay = await api.events(run_id)
    assert [e.data for e in replay] == [e.data for e in live]
    tail = await api.events(run_id, after=live[-3].id)
    assert [e.id for e in tail] == [e.id for e in live[-2:]]
    assert await api.events(run_id, after=live[-1].id) == []
    # Nothing after the last event of a finished run: 204, so an EventSource stops.
    for headers in ({"Last-Event-ID": str(live[-1].id)}, {}):
        path = f"runs/{run_id}/events" + ("" if headers else f"?after={live[-1].id}")
        code, body = await api.call("GET", path, headers=headers)
        assert (code, body) == (204, None)
    code, _ = await api.call("GET", f"runs/{run_id}/events?after={live[-2].id}")
    assert code == 200


async def test_bad_cursor_and_unknown_run(module_api: Api) -> None:
    api = module_api
    session = await api.session()
    run_id = await api.start_run(session, "stream a")
    await api.wait_status(run_id)
    code, doc = await api.call("GET", f"runs/{run_id}/events?after=abc")
    assert code == 400 and doc["detail"]["error"] == "invalid_cursor"
    code, doc = await api.call("GET", "runs/run_00000000000000000000000000000000/events")
    assert code == 404 and doc["detail"]["error"] == "run_not_found"
