"""End-to-end: the examples/echo_agent Host as a real process, spoken to over
plain HTTP (aiohttp, JSON-RPC + SSE), in both A2A 1.0 and 0.3 dialects."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from llamon_playground.common.sse import aiter_sse
from tests.support.waiting import eventually

REPO = Path(__file__).resolve().parents[2]
EXAMPLE_DIR = REPO / "examples" / "echo_agent"
VENV_PYTHON = REPO / ".venv" / "bin" / "python"
PYTHON = str(VENV_PYTHON if VENV_PYTHON.exists() else Path(sys.executable))
CARD_PATH = "/.well-known/agent-card.json"
V1 = {"A2A-Version": "1.0"}
START_DEADLINE_S = 15.0
STOP_DEADLINE_S = 5.0
STREAM_DEADLINE_S = 10.0


@dataclass
class Host:
    proc: subprocess.Popen[bytes]
    base_url: str


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def stop_process_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the Host's group, wait with a deadline, then SIGKILL."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout=STOP_DEADLINE_S)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait(timeout=STOP_DEADLINE_S)
    if proc.stdout is not None:
        proc.stdout.close()


async def wait_until_ready(proc: subprocess.Popen[bytes], base_url: str) -> None:
    async with aiohttp.ClientSession() as session:
        async def card_status() -> int | None:
            if proc.poll() is not None:
                raise AssertionError(f"Host exited early with {proc.returncode}")
            try:
                async with session.get(base_url + CARD_PATH) as resp:
                    return resp.status
            except aiohttp.ClientError:
                return None

        await eventually(card_status, lambda status: status == 200,
                         "the Host to serve its agent card", START_DEADLINE_S)


@pytest.fixture
async def start_host(tmp_path: Path) -> AsyncIterator[Callable[..., Any]]:
    procs: list[subprocess.Popen[bytes]] = []

    async def start(**extra_env: str) -> Host:
        port = free_port()
        env = {**os.environ, "LLAMON_HOST_PORT": str(port), **extra_env}
        # stderr goes to a file, not a pipe: tracebacks from `fail` must never
        # fill a pipe buffer nobody drains, and the file helps debugging.
        with (tmp_path / f"host-{port}.stderr").open("wb") as stderr:
            proc = subprocess.Popen(
                [PYTHON, "-m", "app.host"],
                cwd=EXAMPLE_DIR,
                env=env,
                stdout=subprocess.PIPE,  # carries only the one "ready" line
                stderr=stderr,
                start_new_session=True,
            )
        procs.append(proc)
        base_url = f"http://127.0.0.1:{port}"
        await wait_until_ready(proc, base_url)
        return Host(proc, base_url)

    yield start
    for proc in procs:
        stop_process_group(proc)


@pytest.fixture
async def host(start_host: Callable[..., Any]) -> Host:
    return await start_host()


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as client:
        yield client


# --- JSON-RPC helpers -------------------------------------------------------


def rpc(method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": str(uuid.uuid4()), "method": method, "params": params}


def user_message(*parts: dict[str, Any], **ids: str) -> dict[str, Any]:
    """A 1.0 message; ids may carry taskId/contextId for a continuation."""
    return {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": list(parts), **ids}


def send_streaming(text: str, *extra_parts: dict[str, Any], **ids: str) -> dict[str, Any]:
    message = user_message({"text": text}, *extra_parts, **ids)
    return rpc("SendStreamingMessage", {"message": message})


@dataclass
class Frame:
    event: str  # "message" when the frame names no event
    data: dict[str, Any]


async def sse_frames(resp: aiohttp.ClientResponse) -> AsyncIterator[Frame]:
    """An SSE body as frames (event name + JSON data), parsed by common/sse.py."""
    async for event in aiter_sse(resp.content.iter_any()):
        yield Frame(event.event, json.loads(event.data))


async def stream_all(
    session: aiohttp.ClientSession, url: str, body: dict[str, Any], headers: dict[str, str]
) -> list[Frame]:
    """POST a streaming call and collect every frame until the server closes."""

    async def collect() -> list[Frame]:
        async with session.post(url, json=body, headers=headers) as resp:
            assert resp.status == 200
            assert resp.headers["Content-Type"].startswith("text/event-stream")
            return [frame async for frame in sse_frames(resp)]

    return await asyncio.wait_for(collect(), STREAM_DEADLINE_S)


async def call(
    session: aiohttp.ClientSession, url: str, body: dict[str, Any], headers: dict[str, str]
) -> dict[str, Any]:
    async with session.post(url, json=body, headers=headers) as resp:
        assert resp.status == 200
        return await resp.json()


def results(frames: list[Frame]) -> list[dict[str, Any]]:
    assert all(f.event == "message" and "result" in f.data for f in frames), frames
    return [f.data["result"] for f in frames]


def joined_text(results_: list[dict[str, Any]]) -> str:
    return "".join(
        part.get("text", "")
        for r in results_
        if "artifactUpdate" in r
        for part in r["artifactUpdate"]["artifact"]["parts"]
    )


def final_state(results_: list[dict[str, Any]]) -> str:
    return results_[-1]["statusUpdate"]["status"]["state"]


# --- agent card -------------------------------------------------------------


async def test_card_advertises_both_versions(host: Host, session: aiohttp.ClientSession) -> None:
    async with session.get(host.base_url + CARD_PATH) as resp:
        card = await resp.json()
    assert card["name"] == "echo_agent"
    assert card["capabilities"]["streaming"] is True
    interfaces = card["supportedInterfaces"]
    assert {i["protocolVersion"] for i in interfaces} == {"1.0", "0.3"}
    for interface in interfaces:
        assert interface["protocolBinding"] == "JSONRPC"
        assert interface["url"] == host.base_url + "/"
    assert card["skills"][0]["examples"] == ["stream hello world", "data", "ask", "slow", "fail",
                                             "crash"]


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


async def test_stream_chunks_join_to_text(host: Host, session: aiohttp.ClientSession) -> None:
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
        host: Host, session: aiohttp.ClientSession) -> None:
    res = results(await stream_all(session, host.base_url + "/", send_streaming("tokens 250"), V1))
    chunks = [r["artifactUpdate"] for r in res if "artifactUpdate" in r]
    assert len(chunks) == 250 and len({c["artifact"]["artifactId"] for c in chunks}) == 1
    assert chunks[-1]["lastChunk"] is True and sum("lastChunk" in c for c in chunks) == 1
    assert joined_text(res) == "".join(f"t{n} " for n in range(250))
    assert final_state(res) == "TASK_STATE_COMPLETED"


def task_text(task: dict[str, Any]) -> tuple[str, int]:
    """The task's one artifact: (its text, its number of parts)."""
    artifacts = task.get("artifacts", [])
    if not artifacts:
        return "", 0
    assert len(artifacts) == 1
    parts = artifacts[0]["parts"]
    return "".join(p["text"] for p in parts), len(parts)


async def test_a_long_stream_keeps_the_whole_output_once(
        host: Host, session: aiohttp.ClientSession) -> None:
    """The task store folds streamed chunks into a few large text parts (the SDK copies the
    task per event, so one part per chunk would make a run quadratic): what a mid-stream
    GetTask, a resubscriber and the final GetTask see is still exactly the streamed text."""
    count = 6000  # ~40 KB of text: several of the store's blocks
    whole = "".join(f"t{n} " for n in range(count))
    url = host.base_url + "/"

    async def run() -> tuple[str, str, int, tuple[str, str], str]:
        streamed: list[str] = []
        task_id, snapshot, snapshot_parts = "", "", 0
        resubscriber: asyncio.Task[tuple[str, str]] | None = None
        try:
            async with session.post(url, json=send_streaming(f"tokens {count}"),
                                    headers=V1) as resp:
                async for frame in sse_frames(resp):
                    result = frame.data["result"]
                    if "artifactUpdate" not in result:
                        continue
                    update = result["artifactUpdate"]
                    streamed.extend(p["text"] for p in update["artifact"]["parts"])
                    if len(streamed) == count // 2:
                        task_id = update["taskId"]
                        got = await call(session, url, rpc("GetTask", {"id": task_id}), V1)
                        snapshot, snapshot_parts = task_text(got["result"])
                        assert snapshot.startswith("".join(streamed))  # what was sent so far
                        # Read beside this stream: a subscriber that is not read falls behind.
                        resubscriber = asyncio.ensure_future(resubscribe(task_id))
            assert resubscriber is not None
            return "".join(streamed), snapshot, snapshot_parts, await resubscriber, task_id
        finally:
            if resubscriber is not None and not resubscriber.done():
                resubscriber.cancel()

    async def resubscribe(task_id: str) -> tuple[str, str]:
        """SubscribeToTask mid-stream: the task so far, and the chunks after it."""
        frames = await stream_all(session, url, rpc("SubscribeToTask", {"id": task_id}), V1)
        first, *rest = results(frames)
        text, _ = task_text(first["task"])
        return text, joined_text(rest)

    streamed, snapshot, snapshot_parts, resubscribed, task_id = await asyncio.wait_for(
        run(), STREAM_DEADLINE_S * 3)
    assert streamed == whole
    # The resubscriber misses nothing: the task so far, then every chunk after it. a2a-sdk
    # 1.3 may hand the chunk being saved as the subscription opens both ways (in the task
    # and as the first event; its own InMemoryTaskStore does the same), so the two may
    # overlap by that one chunk.
    so_far, after = resubscribed
    overlap = len(so_far) + len(after) - len(whole)
    assert whole.startswith(so_far) and whole.endswith(after)
    assert 0 <= overlap <= len(f"t{count - 1} "), overlap
    assert whole.startswith(snapshot)
    assert 1 <= snapshot_parts < count // 100  # a few large parts, not one per chunk
    final = (await call(session, url, rpc("GetTask", {"id": task_id}), V1))["result"]
    assert final["status"]["state"] == "TASK_STATE_COMPLETED"
    assert final["artifacts"][0]["parts"] == [{"text": whole}]  # once, as one part


async def test_plain_text_is_echoed(host: Host, session: aiohttp.ClientSession) -> None:
    res = results(await stream_all(session, host.base_url + "/",
                                   send_streaming("Hello there  world"), V1))
    assert joined_text(res) == "Hello there  world"
    assert final_state(res) == "TASK_STATE_COMPLETED"


async def test_data_parts(host: Host, session: aiohttp.ClientSession) -> None:
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


async def test_ask_then_answer(host: Host, session: aiohttp.ClientSession) -> None:
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


async def test_slow_is_cancelled(host: Host, session: aiohttp.ClientSession) -> None:
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


async def test_fail_sends_error_frame(host: Host, session: aiohttp.ClientSession) -> None:
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
async def test_v03_message_stream(host: Host, session: aiohttp.ClientSession,
                                   headers: dict[str, str]) -> None:
    res = results(await stream_all(session, host.base_url + "/", v03_stream("stream a b"), headers))
    assert res[0]["kind"] == "task"
    chunks = [r for r in res if r["kind"] == "artifact-update"]
    assert "".join(p["text"] for c in chunks for p in c["artifact"]["parts"]) == "a b"
    assert res[-1]["kind"] == "status-update"
    assert res[-1]["status"]["state"] == "completed" and res[-1]["final"] is True


async def test_v03_cancel_slow(host: Host, session: aiohttp.ClientSession) -> None:
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


async def test_v03_fail_sends_error_frame(host: Host, session: aiohttp.ClientSession) -> None:
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
        host: Host, session: aiohttp.ClientSession) -> None:
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


STORE_PROBE = """
import asyncio
from a2a.server.context import ServerCallContext
from a2a.types import Task
from app.host import new_task_store

async def main():
    store, task, ctx = new_task_store(), Task(id="t1", context_id="c1"), ServerCallContext()
    await store.save(task, ctx)
    print("kept" if (await store.get("t1", ctx)) is task else "copied")

asyncio.run(main())
"""


@pytest.mark.parametrize("example", ["echo_agent", "flow_project"])
def test_example_task_stores_do_not_copy_the_task_per_event(example: str) -> None:
    # A copying store deep-copies the task with every chunk so far on each streamed event.
    out = subprocess.run([PYTHON, "-c", STORE_PROBE], cwd=REPO / "examples" / example,
                         capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "kept"


FOLD_PROBE = """
import json
from a2a.helpers import new_data_part
from a2a.types import Task
from llamon_playground.host_manager.host_side.task_store import fold_last_chunk, join_text_parts
from google.protobuf.json_format import MessageToDict

task = Task(id="t1", context_id="c1")
parts = task.artifacts.add(artifact_id="a1").parts
parts.add(text="a ")
parts.add(text="b ")
fold_last_chunk(task, block=3)       # "a " is under 3 characters: folded
parts.add(text="c ")
fold_last_chunk(task, block=3)       # "a b " is not: kept apart
parts.add(text="md", media_type="text/markdown")
parts.append(new_data_part({"k": 1}))
parts.add(text="x ")
parts.add(text="y ").metadata.update({"m": 1})
parts.add(text="z ")
parts.add(text="!")
join_text_parts(task)
print(json.dumps(MessageToDict(task)["artifacts"][0]["parts"]))
"""


def test_the_task_store_folds_only_plain_text_of_one_kind() -> None:
    out = subprocess.run([PYTHON, "-c", FOLD_PROBE], cwd=EXAMPLE_DIR, capture_output=True,
                         text=True, timeout=60, check=True)
    assert json.loads(out.stdout) == [
        {"text": "a b c "}, {"text": "md", "mediaType": "text/markdown"}, {"data": {"k": 1}},
        {"text": "x "}, {"text": "y ", "metadata": {"m": 1}}, {"text": "z !"}]
