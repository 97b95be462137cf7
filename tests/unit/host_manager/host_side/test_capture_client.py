"""The Host helper's capture client from async code (`PlaygroundCapture.aemit`): one HTTP
request on the event loop to the daemon's socket, no worker thread, and False (never an
exception) when the daemon refuses, is gone or does not answer in time.

The daemon here is an aiohttp stand-in on a Unix socket that records what it was sent; the
real daemon's side is exercised by every `stream` run of the example Host (e2e tests)."""

from __future__ import annotations

import asyncio
import shutil
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from aiohttp import web

from llamon_playground.host_manager.host_side.capture import CAPTURE_PATH, PlaygroundCapture
from tests.support.procs import short_tmpdir

TOKEN = "t" * 43
EVENTS = [{"type": "node.start", "node": "echo"}, {"type": "note", "text": "é ✓"}]


@asynccontextmanager
async def daemon_stand_in(status: int = 200, hang: asyncio.Event | None = None
                          ) -> AsyncIterator[tuple[str, list[dict[str, Any]]]]:
    """(socket path, what each request carried) while it serves."""
    seen: list[dict[str, Any]] = []

    async def capture(request: web.Request) -> web.Response:
        seen.append({"authorization": request.headers.get("Authorization"),
                     "content_type": request.content_type, "body": await request.json()})
        if hang is not None:
            await hang.wait()
        return web.json_response({"accepted": len(seen)}, status=status)

    app = web.Application()
    app.router.add_post(CAPTURE_PATH, capture)
    runner = web.AppRunner(app)
    await runner.setup()
    folder = short_tmpdir("lpcc")
    path = str(folder / "d.sock")
    try:
        await web.UnixSite(runner, path).start()
        yield path, seen
    finally:
        if hang is not None:
            hang.set()
        await runner.cleanup()
        shutil.rmtree(folder, ignore_errors=True)


def worker_threads() -> set[str]:
    return {t.name for t in threading.enumerate() if t.name.startswith("asyncio_")}


async def test_a_report_reaches_the_daemon_from_the_loop_itself() -> None:
    threads_before = worker_threads()
    async with daemon_stand_in() as (path, seen):
        capture = PlaygroundCapture(TOKEN, path)
        assert await capture.aemit("run_1", EVENTS) is True
        assert await capture.aemit("run_1", EVENTS[:1]) is True  # a second connection
    assert seen[0] == {"authorization": f"Bearer {TOKEN}", "content_type": "application/json",
                       "body": {"run_id": "run_1", "events": EVENTS}}
    assert seen[1]["body"]["events"] == EVENTS[:1]
    # No thread pool: a worker would wait for the GIL while the Host's loop streams.
    assert worker_threads() == threads_before


async def test_a_refusal_is_false() -> None:
    async with daemon_stand_in(status=401) as (path, seen):
        assert await PlaygroundCapture(TOKEN, path).aemit("run_1", EVENTS) is False
    assert len(seen) == 1


async def test_no_daemon_is_false(tmp_path: Path) -> None:
    gone = PlaygroundCapture(TOKEN, str(tmp_path / "nobody.sock"))
    assert await gone.aemit("run_1", EVENTS) is False


async def test_a_daemon_that_never_answers_is_false_after_the_timeout() -> None:
    hang = asyncio.Event()
    async with daemon_stand_in(hang=hang) as (path, _seen):
        capture = PlaygroundCapture(TOKEN, path, timeout=0.2)
        assert await asyncio.wait_for(capture.aemit("run_1", EVENTS), 10) is False
