"""The example echo Host as a real process, and the JSON-RPC + SSE helpers the tests speak
to it with (plain HTTP: aiohttp, both A2A 1.0 and 0.3 dialects). Fixtures: `start_host`,
`host`, `shared_host` (one per module), `session`."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import urllib.request
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from llamon_playground.common.sse import aiter_sse
from llamon_playground.host_manager.environment import free_port
from tests.support.waiting import eventually, wait_for

REPO = Path(__file__).resolve().parents[2]
EXAMPLE_DIR = REPO / "examples" / "echo_agent"
VENV_PYTHON = REPO / ".venv" / "bin" / "python"
PYTHON = str(VENV_PYTHON if VENV_PYTHON.exists() else Path(sys.executable))
CARD_PATH = "/.well-known/agent-card.json"
V1 = {"A2A-Version": "1.0"}
START_DEADLINE_S = 15.0
STOP_DEADLINE_S = 5.0
# A deadline, not a speed target: a passing stream returns at once, and two test workers on
# a busy two-core machine can take several times a quiet one's few seconds.
STREAM_DEADLINE_S = 30.0


@dataclass
class Host:
    proc: subprocess.Popen[bytes]
    base_url: str


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


def _serves_its_card(proc: subprocess.Popen[bytes], base_url: str) -> bool:
    if proc.poll() is not None:
        raise AssertionError(f"Host exited early with {proc.returncode}")
    try:
        with urllib.request.urlopen(base_url + CARD_PATH, timeout=5) as resp:
            return bool(resp.status == 200)
    except OSError:
        return False


@pytest.fixture(scope="module")
def shared_host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Host]:
    """One Host (default environment) for a module's tests that only talk to it, each in
    a task of its own; a test that crashes it, stops it or reads its stdout takes `host`."""
    port = free_port()
    env = {**os.environ, "LLAMON_HOST_PORT": str(port)}
    with (tmp_path_factory.mktemp("host") / "host.stderr").open("wb") as stderr:
        proc = subprocess.Popen([PYTHON, "-m", "app.host"], cwd=EXAMPLE_DIR, env=env,
                                stdout=subprocess.DEVNULL, stderr=stderr,
                                start_new_session=True)
    try:
        base_url = f"http://127.0.0.1:{port}"
        wait_for(lambda: _serves_its_card(proc, base_url), START_DEADLINE_S,
                 "the Host to serve its agent card")
        yield Host(proc, base_url)
    finally:
        stop_process_group(proc)


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
