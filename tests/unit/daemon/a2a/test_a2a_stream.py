"""daemon/a2a/client.py: a Host's stream read in paced batches, over a real local HTTP server.

The reads are paced (what arrives while the daemon waits is taken in one read); whatever
the pacing, every event comes through once, in order, however the Host's writes cut the
frames, and the batches are never empty.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

import aiohttp
import orjson
import pytest
from aiohttp import web

from llamon_playground.daemon.a2a.client import A2AClient
from llamon_playground.daemon.a2a.wire import V1, A2AEvent, A2AProtocolError, Interface
from tests.support.loopback_app import serving

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def chunk_frame(n: int, *, append: bool = True) -> bytes:
    update = {"taskId": "t1", "contextId": "c1",
              "artifact": {"artifactId": "a1", "parts": [{"text": f"t{n} "}]}}
    if append:
        update["append"] = True
    doc = {"jsonrpc": "2.0", "id": "1", "result": {"artifactUpdate": update}}
    return b"data: " + orjson.dumps(doc) + b"\r\n\r\n"


def status_frame(state: str) -> bytes:
    doc = {"jsonrpc": "2.0", "id": "1", "result": {"statusUpdate": {
        "taskId": "t1", "contextId": "c1", "status": {"state": state}}}}
    return b"data: " + orjson.dumps(doc) + b"\r\n\r\n"


async def serve(handler: Handler) -> AsyncIterator[str]:
    app = web.Application()
    app.router.add_post("/", handler)
    async with serving(app) as base:
        yield f"{base}/"


async def event_types(handler: Handler, each_read: asyncio.Event,
                      until: str | None = None) -> list[str]:
    """The types of the events the client reads from `handler`'s stream, `each_read` set
    after every read: up to the first `until` event, else to the stream's end."""
    async for url in serve(handler):
        async with aiohttp.ClientSession() as http:
            client = A2AClient(http, url)
            seen: list[str] = []
            async for batch in client.stream(Interface(url, V1), {}, {}):
                seen.extend(event.type for event in batch)
                each_read.set()
                if until is not None and until in seen:
                    return seen
            if until is None:
                return seen
    raise AssertionError(f"the stream ended without {until or 'its end'}")


async def read_all(handler: Handler) -> list[list[A2AEvent]]:
    async for url in serve(handler):
        async with aiohttp.ClientSession() as http:
            client = A2AClient(http, url)
            return [batch async for batch in client.stream(Interface(url, V1), {}, {})]
    raise AssertionError("the server did not start")


async def sse_response(request: web.Request) -> web.StreamResponse:
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await response.prepare(request)
    return response


async def test_every_event_once_in_order_however_the_writes_cut_the_frames() -> None:
    count = 500
    body = chunk_frame(0, append=False) + b"".join(chunk_frame(n) for n in range(1, count))
    body += status_frame("TASK_STATE_COMPLETED")

    async def handler(request: web.Request) -> web.StreamResponse:
        response = await sse_response(request)
        # Writes of odd sizes that cut frames (and their CRLFs) anywhere, with pauses
        # between some of them, so reads see both partial and many frames.
        pos, step = 0, 1
        while pos < len(body):
            await response.write(body[pos:pos + step])
            pos += step
            step = step * 3 % 997 + 1
            if step % 5 == 0:
                await asyncio.sleep(0)
        await response.write_eof()
        return response

    batches = await read_all(handler)
    assert all(batches)
    events = [event for batch in batches for event in batch]
    assert [e.parts[0].text for e in events[:-1]] == [f"t{n} " for n in range(count)]
    assert [e.append for e in events[:2]] == [False, True]
    assert events[-1].type == "status" and events[-1].state == "completed"


async def test_a_host_that_answers_json_before_streaming_gives_one_event() -> None:
    async def handler(request: web.Request) -> web.StreamResponse:
        return web.json_response({"jsonrpc": "2.0", "id": "1",
                                  "error": {"code": -32601, "message": "no such method"}})

    batches = await read_all(handler)
    assert [[(e.type, e.error_code) for e in batch] for batch in batches] == [
        [("error", -32601)]]


async def test_an_error_frame_and_a_frame_that_is_not_json() -> None:
    async def error_event(request: web.Request) -> web.StreamResponse:
        response = await sse_response(request)
        await response.write(chunk_frame(0, append=False) + b"event: error\r\n"
                             + status_frame("TASK_STATE_WORKING"))
        return response

    batches = await read_all(error_event)
    events = [event for batch in batches for event in batch]
    assert [e.type for e in events] == ["artifact", "error"]

    async def not_json(request: web.Request) -> web.StreamResponse:
        response = await sse_response(request)
        await response.write(b"data: {nope\r\n\r\n")
        return response

    with pytest.raises(A2AProtocolError):
        await read_all(not_json)


async def test_the_first_output_is_read_at_once_after_the_frames_that_open_a_stream(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A stream opens with task and status frames, each read on its own: none of them is
    followed by a pace, so the first token is not held back. The pace is made an hour long
    here: a read paced after the status frame would never see the artifact in time."""
    from llamon_playground.daemon.a2a import client as a2a_client
    monkeypatch.setattr(a2a_client, "READ_PACE", 3600.0)
    status_read = asyncio.Event()

    async def handler(request: web.Request) -> web.StreamResponse:
        response = await sse_response(request)
        await response.write(status_frame("TASK_STATE_WORKING"))
        await status_read.wait()  # the client took it in a read of its own
        await response.write(chunk_frame(0, append=False))
        await response.write_eof()
        return response

    seen = await asyncio.wait_for(event_types(handler, status_read, until="artifact"), 20)
    assert seen == ["status", "artifact"]


async def test_a_short_answers_end_is_read_at_once_after_its_token(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A one-token answer: its artifact, then its last status frame and the stream's close
    come after the client read the token. No pace follows the first outputs, so the run
    ends as soon as the Host's stream does. The pace is made an hour long here: a read paced
    after the token would never see the end in time."""
    from llamon_playground.daemon.a2a import client as a2a_client
    monkeypatch.setattr(a2a_client, "READ_PACE", 3600.0)
    token_read = asyncio.Event()

    async def handler(request: web.Request) -> web.StreamResponse:
        response = await sse_response(request)
        await response.write(chunk_frame(0, append=False))
        await token_read.wait()  # the client took it in a read of its own
        await response.write(status_frame("TASK_STATE_COMPLETED"))
        await response.write_eof()
        return response

    seen = await asyncio.wait_for(event_types(handler, token_read), 20)
    assert seen == ["artifact", "status"]


async def test_a_hold_keeps_the_stream_unread_until_its_future_is_done(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A long answer's second token comes while its first is still being committed: the run
    asks the stream to hold (its first output's commit). Nothing more is read until that is
    done. Here the Host's next frame is already sent, and a whole round trip of another
    request on the same loop goes by (the unheld stream reads it in the meantime); only then
    is the hold released. HOLD_MAX is made an hour long so only the release ends it."""
    from llamon_playground.daemon.a2a import client as a2a_client
    monkeypatch.setattr(a2a_client, "HOLD_MAX", 3600.0)
    held: asyncio.Future[None] | None = None
    asked = asyncio.Event()
    next_sent = asyncio.Event()

    async def handler(request: web.Request) -> web.StreamResponse:
        response = await sse_response(request)
        await response.write(chunk_frame(0, append=False))
        await asked.wait()  # the client took the first frame and asked to hold
        await response.write(chunk_frame(1))
        next_sent.set()
        await response.write(status_frame("TASK_STATE_COMPLETED"))
        await response.write_eof()
        return response

    async def ping(request: web.Request) -> web.Response:
        return web.Response(text="pong")

    def hold() -> asyncio.Future[None] | None:
        nonlocal held
        if held is None:
            held = asyncio.get_running_loop().create_future()
            asked.set()
            return held
        return None

    async def run() -> tuple[list[list[str]], list[list[str]]]:
        app = web.Application()
        app.router.add_post("/", handler)
        app.router.add_get("/ping", ping)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        url = f"http://127.0.0.1:{runner.addresses[0][1]}/"
        seen: list[list[str]] = []
        try:
            async with aiohttp.ClientSession() as http:
                client = A2AClient(http, url)

                async def consume() -> None:
                    async for batch in client.stream(Interface(url, V1), {}, {}, hold=hold):
                        seen.append([e.parts[0].text if e.parts else e.type for e in batch])

                consumer = asyncio.create_task(consume())
                try:
                    await next_sent.wait()
                    async with aiohttp.ClientSession() as other:
                        async with other.get(url + "ping") as resp:
                            assert await resp.text() == "pong"
                    while_held = [list(batch) for batch in seen]
                    assert held is not None
                    held.set_result(None)
                    await consumer
                finally:
                    consumer.cancel()
                    await asyncio.gather(consumer, return_exceptions=True)
        finally:
            await runner.cleanup()
        return while_held, seen

    while_held, seen = await asyncio.wait_for(run(), 20)
    assert while_held == [["t0 "]]
    assert [text for batch in seen for text in batch] == ["t0 ", "t1 ", "status"]
