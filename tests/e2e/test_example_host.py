"""End-to-end: the examples/echo_agent Host as a real process, spoken to over
plain HTTP (aiohttp, JSON-RPC + SSE), in both A2A 1.0 and 0.3 dialects. The tests that
only talk to it share one Host; those that configure, crash, stop it or read its stdout
start their own."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import signal
import time
import uuid
from collections.abc import Callable
from typing import Any

import aiohttp
import pytest

from tests.support.a2a_host import (
    CARD_PATH,
    STOP_DEADLINE_S,
    STREAM_DEADLINE_S,
    V1,
    Host,
    call,
    final_state,
    joined_text,
    results,
    rpc,
    send_streaming,
    sse_frames,
    stream_all,
)


async def test_card_advertises_both_versions(
        shared_host: Host, session: aiohttp.ClientSession) -> None:
    host = shared_host
    async with session.get(host.base_url + CARD_PATH) as resp:
        card = await resp.json()
    assert card["name"] == "echo_agent"
    assert card["capabilities"]["streaming"] is True
    interfaces = card["supportedInterfaces"]
    assert {i["protocolVersion"] for i in interfaces} == {"1.0", "0.3"}
    for interface in interfaces:
        assert interface["protocolBinding"] == "JSONRPC"
        assert interface["url"] == host.base_url + "/"
    assert card["skills"][0]["examples"] == ["stream hello world", "markdown", "data", "ask",
                                             "slow", "fail", "crash"]


async def test_card_can_advertise_only_v03(
    start_host: Callable[..., Any], session: aiohttp.ClientSession
) -> None:
    host = await start_host(LLAMON_A2A_VERSIONS="0.3")
    async with session.get(host.base_url + CARD_PATH) as resp:
        card = await resp.json()
    assert [i["protocolVersion"] for i in card["supportedInterfaces"]] == ["0.3"]
    assert card["protocolVersion"] == "0.3"  # the legacy top-level field


async def test_ready_line_on_stdout(host: Host) -> None:
    assert host.proc.stdout is not None
    line = host.proc.stdout.readline().decode().strip()
    assert line == f"echo_agent ready on {host.base_url}"


# --- 1.0 behaviours ---------------------------------------------------------


async def test_stream_chunks_join_to_text(
        shared_host: Host, session: aiohttp.ClientSession) -> None:
    host = shared_host
    body = send_streaming("stream one two three")
    body["params"]["metadata"] = {"llamon.playground": {"runId": "r1"}}
    res = results(await stream_all(session, host.base_url + "/", body, V1))

    assert "task" in res[0]
    task_id = res[0]["task"]["id"]
    chunks = [r["artifactUpdate"] for r in res if "artifactUpdate" in r]
    assert len(chunks) == 3
    assert len({c["artifact"]["artifactId"] for c in chunks}) == 1
    assert "append" not in chunks[0] and all(c["append"] for c in chunks[1:])
    assert chunks[-1]["lastChunk"] is True and "lastChunk" not in chunks[0]
    assert joined_text(res) == "one two three"
    assert final_state(res) == "TASK_STATE_COMPLETED"
    assert all(r.get("statusUpdate", r.get("artifactUpdate", {})).get("taskId", task_id) == task_id
               for r in res)
    # The reserved envelope must not come back anywhere.
    assert "llamon.playground" not in json.dumps(res)


async def test_tokens_streams_n_chunks_of_one_artifact(
        shared_host: Host, session: aiohttp.ClientSession) -> None:
    host = shared_host
    res = results(await stream_all(session, host.base_url + "/", send_streaming("tokens 250"), V1))
    chunks = [r["artifactUpdate"] for r in res if "artifactUpdate" in r]
    assert len(chunks) == 250 and len({c["artifact"]["artifactId"] for c in chunks}) == 1
    assert chunks[-1]["lastChunk"] is True and sum("lastChunk" in c for c in chunks) == 1
    assert joined_text(res) == "".join(f"t{n} " for n in range(250))
    assert final_state(res) == "TASK_STATE_COMPLETED"


async def test_plain_text_is_echoed(shared_host: Host, session: aiohttp.ClientSession) -> None:
    host = shared_host
    res = results(await stream_all(session, host.base_url + "/",
                                   send_streaming("Hello there  world"), V1))
    assert joined_text(res) == "Hello there  world"
    assert final_state(res) == "TASK_STATE_COMPLETED"


async def test_data_parts(shared_host: Host, session: aiohttp.ClientSession) -> None:
    host = shared_host
    body = send_streaming("data", {"data": {"q": 18}})
    res = results(await stream_all(session, host.base_url + "/", body, V1))
    parts = [p for r in res if "artifactUpdate" in r
             for p in r["artifactUpdate"]["artifact"]["parts"]]

    data = next(p["data"] for p in parts if "data" in p)
    assert data["kind_of"] == "report" and data["count"] == 3
    assert data["items"] == ["a", "b"] and data["nested"] == {"ok": True}
    assert data["input"] == {"q": 18}  # protobuf Value: comes back as 18.0
    raw = next(p for p in parts if "raw" in p)
    assert base64.b64decode(raw["raw"]) == b"hello from echo_agent\n"
    assert raw["filename"] == "hello.txt" and raw["mediaType"] == "text/plain"
    url = next(p for p in parts if "url" in p)
    assert url["url"] == "https://example.invalid/report.pdf"
    assert url["filename"] == "report.pdf" and url["mediaType"] == "application/pdf"
    assert final_state(res) == "TASK_STATE_COMPLETED"


async def test_ask_then_answer(shared_host: Host, session: aiohttp.ClientSession) -> None:
    host = shared_host
    first = results(await stream_all(session, host.base_url + "/", send_streaming("ask"), V1))
    status = first[-1]["statusUpdate"]
    assert status["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert status["status"]["message"]["parts"][0]["text"] == "What is your name?"

    ids = {"taskId": status["taskId"], "contextId": status["contextId"]}
    second = results(await stream_all(session, host.base_url + "/",
                                      send_streaming("Ada", **ids), V1))
    assert "task" not in second[0]  # a continuation opens with a status update
    assert joined_text(second) == "Hello, Ada!"
    assert final_state(second) == "TASK_STATE_COMPLETED"


async def test_slow_is_cancelled(shared_host: Host, session: aiohttp.ClientSession) -> None:
    host = shared_host
    url = host.base_url + "/"

    async def run() -> tuple[list[dict[str, Any]], dict[str, Any]]:
        seen: list[dict[str, Any]] = []
        cancel_reply: dict[str, Any] = {}
        async with session.post(url, json=send_streaming("slow"), headers=V1) as resp:
            async for frame in sse_frames(resp):
                seen.append(frame.data["result"])
                ticks = [r for r in seen if "artifactUpdate" in r]
                if len(ticks) == 2 and not cancel_reply:
                    task_id = seen[0]["task"]["id"]
                    cancel_reply = await call(session, url, rpc("CancelTask", {"id": task_id}), V1)
        return seen, cancel_reply

    started = time.monotonic()
    seen, cancel_reply = await asyncio.wait_for(run(), STREAM_DEADLINE_S)
    assert time.monotonic() - started < 5
    assert cancel_reply["result"]["status"]["state"] == "TASK_STATE_CANCELED"
    assert joined_text(seen).startswith("tick 1 tick 2 ")
    task_id = seen[0]["task"]["id"]
    got = await call(session, url, rpc("GetTask", {"id": task_id}), V1)
    assert got["result"]["status"]["state"] == "TASK_STATE_CANCELED"


async def test_fail_sends_error_frame(shared_host: Host, session: aiohttp.ClientSession) -> None:
    host = shared_host
    frames = await stream_all(session, host.base_url + "/", send_streaming("fail"), V1)
    assert "artifactUpdate" in frames[-2].data["result"]
    assert frames[-1].event == "error"
    assert frames[-1].data["error"]["code"] == -32603
    task_id = frames[0].data["result"]["task"]["id"]
    got = await call(session, host.base_url + "/", rpc("GetTask", {"id": task_id}), V1)
    assert got["result"]["status"]["state"] == "TASK_STATE_FAILED"


async def test_crash_kills_the_host(host: Host, session: aiohttp.ClientSession) -> None:
    seen: list[dict[str, Any]] = []

    async def run() -> None:
        async with session.post(host.base_url + "/", json=send_streaming("crash"),
                                headers=V1) as resp:
            async for frame in sse_frames(resp):
                seen.append(frame.data["result"])

    # The connection drops mid-body (ClientPayloadError or a disconnect).
    with pytest.raises(aiohttp.ClientError):
        await asyncio.wait_for(run(), STREAM_DEADLINE_S)
    assert joined_text(seen) == "about to crash "
    assert "statusUpdate" not in seen[-1]
    assert host.proc.wait(timeout=STOP_DEADLINE_S) == 3


# --- 0.3 compat -------------------------------------------------------------


def v03_stream(text: str) -> dict[str, Any]:
    message = {
        "kind": "message",
        "role": "user",
        "parts": [{"kind": "text", "text": text}],
        "messageId": str(uuid.uuid4()),
    }
    return rpc("message/stream", {"message": message})


@pytest.mark.parametrize("headers", [{}, {"A2A-Version": "0.3"}], ids=["no-header", "0.3-header"])
async def test_v03_message_stream(shared_host: Host, session: aiohttp.ClientSession,
                                   headers: dict[str, str]) -> None:
    host = shared_host
    res = results(await stream_all(session, host.base_url + "/", v03_stream("stream a b"), headers))
    assert res[0]["kind"] == "task"
    chunks = [r for r in res if r["kind"] == "artifact-update"]
    assert "".join(p["text"] for c in chunks for p in c["artifact"]["parts"]) == "a b"
    assert res[-1]["kind"] == "status-update"
    assert res[-1]["status"]["state"] == "completed" and res[-1]["final"] is True


async def test_v03_cancel_slow(shared_host: Host, session: aiohttp.ClientSession) -> None:
    host = shared_host
    url = host.base_url + "/"

    async def run() -> tuple[list[dict[str, Any]], dict[str, Any]]:
        seen: list[dict[str, Any]] = []
        cancel_reply: dict[str, Any] = {}
        async with session.post(url, json=v03_stream("slow"), headers={}) as resp:
            async for frame in sse_frames(resp):
                seen.append(frame.data["result"])
                ticks = [r for r in seen if r["kind"] == "artifact-update"]
                if len(ticks) == 2 and not cancel_reply:
                    cancel = rpc("tasks/cancel", {"id": seen[0]["id"]})
                    cancel_reply = await call(session, url, cancel, {})
        return seen, cancel_reply

    started = time.monotonic()
    seen, cancel_reply = await asyncio.wait_for(run(), STREAM_DEADLINE_S)
    assert time.monotonic() - started < 5
    assert cancel_reply["result"]["status"]["state"] == "canceled"
    got = await call(session, url, rpc("tasks/get", {"id": seen[0]["id"]}), {})
    assert got["result"]["status"]["state"] == "canceled"


async def test_v03_fail_sends_error_frame(
        shared_host: Host, session: aiohttp.ClientSession) -> None:
    host = shared_host
    frames = await stream_all(session, host.base_url + "/", v03_stream("fail"), {})
    assert frames[-2].data["result"]["kind"] == "artifact-update"
    # Unlike 1.0, the 0.3 adapter sends the error as a plain data frame
    # (no "event: error" line).
    assert frames[-1].data["error"]["code"] == -32603


# --- process lifecycle ------------------------------------------------------


async def test_sigterm_stops_promptly_with_open_stream(
    host: Host, session: aiohttp.ClientSession
) -> None:
    async with session.post(host.base_url + "/", json=send_streaming("slow"), headers=V1) as resp:
        frames = sse_frames(resp)
        first = await asyncio.wait_for(anext(frames), STREAM_DEADLINE_S)
        assert "task" in first.data["result"]
        started = time.monotonic()
        os.killpg(host.proc.pid, signal.SIGTERM)
        await asyncio.to_thread(host.proc.wait, STOP_DEADLINE_S)
        assert time.monotonic() - started < 3
        await frames.aclose()


# --- the door: what a web page sends is refused -----------------------------


async def test_requests_a_web_page_can_send_are_refused(
        shared_host: Host, session: aiohttp.ClientSession) -> None:
    host = shared_host
    port = host.base_url.rsplit(":", 1)[1]
    body = json.dumps(rpc("GetTask", {"id": "nope"})).encode()
    # DNS rebinding: the page's own name in the Host header, reading the answer.
    async with session.get(host.base_url + CARD_PATH,
                           headers={"Host": f"attacker.example:{port}"}) as resp:
        assert resp.status == 403 and (await resp.json())["error"] == "host_refused"
    # A blind cross-site POST: simple request (text/plain), the page's Origin.
    async with session.post(host.base_url + "/", data=body, headers={
            "Origin": "https://attacker.example", "Content-Type": "text/plain"}) as resp:
        assert resp.status == 403 and (await resp.json())["error"] == "origin_refused"
    async with session.post(host.base_url + "/", data=body,
                            headers={"Content-Type": "text/plain"}) as resp:
        assert resp.status == 415
    async with session.post(host.base_url + "/", data=body, headers={
            "Content-Type": "application/json", "Origin": f"http://localhost:{port}"}) as resp:
        assert resp.status == 200  # the daemon's own kind of request still gets through


