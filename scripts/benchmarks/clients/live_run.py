"""A live daemon (+ front when it lets us in) with a Ready Host, for the load sections."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

import aiohttp

from scripts.benchmarks.clients.client import (
    FrontUnavailable,
    call,
    direct_session,
    start_checked_front,
)
from scripts.benchmarks.clients.raw_http import SseReader, SseTarget, open_sse
from scripts.benchmarks.figures import log
from scripts.benchmarks.owned import Owned
from scripts.benchmarks.stack import Stack


@dataclass
class LiveRun:
    """The stack, a direct client, one session, and where SSE clients connect."""

    stack: Stack
    direct: aiohttp.ClientSession
    session_id: str
    target: SseTarget  # where the measured clients connect
    observer: SseTarget  # the daemon socket
    via: str
    pids: dict[str, int] = field(default_factory=dict)

    async def close(self, owned: Owned) -> None:
        await self.direct.close()
        owned.close_stack(self.stack)


async def open_live(owned: Owned, prefix: str, delay_ms: int) -> LiveRun:
    """Start it all; the echo agent waits `delay_ms` between streamed chunks."""
    stack = owned.start(owned.project(prefix), extra_env={"ECHO_CHUNK_DELAY_MS": str(delay_ms)})
    assert stack.daemon is not None
    direct = direct_session(stack, limit=0)
    try:
        sock = str(stack.settings.socket_path)
        pids = {"daemon": stack.daemon.pid}
        try:
            front_pid, url, headers = await start_checked_front(stack)
            target = SseTarget("tcp", int(url.rsplit(":", 1)[1]), headers)
            via = "front"
            pids["front"] = front_pid
        except FrontUnavailable as exc:
            log(f"{prefix}: front unavailable, measuring on the daemon socket instead: {exc}")
            target, via = SseTarget("unix", sock), f"daemon socket (front unavailable: {exc})"
        status = await call(direct, "POST", "host/start")
        if status["state"] != "ready":
            raise RuntimeError(f"the Host is not Ready: {status}")
        pids["host"] = int(status["pid"])
        session = await call(direct, "POST", "sessions", {"title": prefix}, want=201)
    except BaseException:
        await direct.close()  # the stack itself is torn down by its owner
        raise
    owned.note(stack)
    return LiveRun(stack, direct, session["id"], target, SseTarget("unix", sock), via, pids)


async def read_truth(live: LiveRun, run_id: str) -> list[int]:
    """Every id of a finished run, replayed from the start on the daemon socket."""
    reader = await open_sse(live.observer, run_id)
    await asyncio.wait_for(reader.closed, 60)
    if reader.status != 200 or not reader.frames.ended_terminal:
        raise RuntimeError(f"truth replay of {run_id}: status {reader.status}, "
                           f"last {reader.frames.last_frame[:200]!r}")
    return reader.seqs


def close_readers(readers: list[SseReader]) -> None:
    for r in readers:
        r.close()
