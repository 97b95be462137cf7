"""End-to-end: the task store the example Hosts use (the Host helper's `StreamingTaskStore`)
keeps a long stream's cost flat and its output whole: a mid-stream GetTask, a resubscriber
and the final task all hold the streamed text, once."""

from __future__ import annotations

import asyncio
import subprocess
from typing import Any

import aiohttp
import pytest

from tests.support.a2a_host import (
    PYTHON,
    REPO,
    STREAM_DEADLINE_S,
    V1,
    Host,
    call,
    joined_text,
    results,
    rpc,
    send_streaming,
    sse_frames,
    stream_all,
)


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


STORE_PROBE = REPO / "tests" / "children" / "task_store_probe.py"


@pytest.mark.parametrize("example", ["echo_agent", "flow_project"])
def test_example_task_stores_do_not_copy_the_task_per_event(example: str) -> None:
    # A copying store deep-copies the task with every chunk so far on each streamed event.
    out = subprocess.run([PYTHON, str(STORE_PROBE)], cwd=REPO / "examples" / example,
                         capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "kept"
