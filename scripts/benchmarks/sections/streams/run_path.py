"""The run path against its floor, on one live stack (daemon + front + the example Agent):

  run_path   create -> first output event, create -> done (a one-token answer), and the first
             token of a 10,000-token answer, through the front  vs  the same request sent
             straight to the same Host by a bare A2A client (aiohttp, HTTP + SSE, no daemon),
             interleaved in the same run; with a breakdown by hop
  first_run  create -> done of a daemon's first run (a one-token answer), the Host started
             with the daemon (prewarm, the default)  vs  the same first run with the Host
             started on demand (LLAMON_PLAYGROUND_PREWARM=0), daemons started alternately

A figure through the front is the client's whole view: the POST, its 202, the stream opened
on the run's events, the first `output.delta` (or the terminal `run.status`) read. The floor
is what no Playground can beat: one POST to the Host's A2A endpoint and its SSE frames read
(the first artifact frame, the stream's end). What the front's figure has over the floor is the
Playground's: two HTTP hops to create and its commit, the phases (queued lazy: they commit
with the first output), the A2A request built and sent on a kept-alive connection, the Host's
event parsed, committed, published and written on the stream twice (daemon, front). In the
breakdown every frame up to the first `output.delta` arrives at once (one commit).

The prewarmed daemon's first run is sent once its /health says the Host is Ready (a developer
opens the page and types first); /health opens no history, so a daemon never used has none.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import aiohttp
import orjson

from llamon_playground.daemon.a2a.wire import build_message, choose_interface, parts_to_wire
from scripts.benchmarks.clients.client import (
    COMPLETED,
    P,
    call,
    count_sse,
    direct_session,
    start_run,
)
from scripts.benchmarks.clients.live_run import LiveRun, open_live
from scripts.benchmarks.clients.raw_http import open_sse
from scripts.benchmarks.figures import Figure, Target, log, pct
from scripts.benchmarks.owned import Owned

# `tokens 1`, not `stream x`: the latter first reports a trace over the capture channel and
# waits for its answer (a durable commit) before its token, which a bare client never pays.
ONE_TOKEN = "tokens 1"
LONG_TOKENS = 10_000
LONG = f"tokens {LONG_TOKENS}"
READY_WAIT_S = 30.0


class BareA2A:
    """A bare A2A client of the Host: one kept-alive aiohttp session, the daemon's message
    shape (the same parts, contextId and role), no envelope, no daemon."""

    def __init__(self, base_url: str) -> None:
        self._http = aiohttp.ClientSession()
        self._base = base_url.rstrip("/")
        self._url = ""
        self._version = ""

    async def open(self) -> None:
        async with self._http.get(self._base + "/.well-known/agent-card.json") as resp:
            card = orjson.loads(await resp.read())
        interface = choose_interface(card, self._base)
        self._url, self._version = interface.url, interface.version

    async def send(self, text: str) -> tuple[float, float, float]:
        """(ms to the first artifact frame, ms to the stream's end, ms to the first byte of
        the stream: the Host's task frame) from the POST."""
        parts = parts_to_wire([{"kind": "text", "text": text}], self._version, None)
        message = build_message(parts, self._version, f"ctx-bare-{time.monotonic_ns()}", None)
        body = orjson.dumps({"jsonrpc": "2.0", "id": "1",
                             "method": ("SendStreamingMessage" if self._version == "1.0"
                                        else "message/stream"),
                             "params": {"message": message, "metadata": {}}})
        headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}
        if self._version == "1.0":
            headers["A2A-Version"] = "1.0"
        first: float | None = None
        first_byte: float | None = None
        t0 = time.perf_counter()
        async with self._http.post(self._url, data=body, headers=headers) as resp:
            if resp.status != 200:
                raise RuntimeError(f"the Host answered {resp.status}")
            async for chunk in resp.content.iter_any():
                if first_byte is None:
                    first_byte = time.perf_counter()
                if first is None and b"rtifact" in chunk:
                    first = time.perf_counter()
        done = time.perf_counter()
        if first is None or first_byte is None:
            raise RuntimeError("the Host streamed no artifact")
        return (first - t0) * 1000, (done - t0) * 1000, (first_byte - t0) * 1000

    async def close(self) -> None:
        await self._http.close()


async def through_front(live: LiveRun, front: aiohttp.ClientSession,
                        text: str) -> dict[str, Any]:
    """One run through the front: ms from the POST to its 202, to the first output.delta and
    to the terminal run.status, read on the run's event stream."""
    body = orjson.dumps({"parts": [{"kind": "text", "text": text}]})
    for _attempt in range(500):
        t0 = time.perf_counter()
        async with front.post(f"{P}/sessions/{live.session_id}/runs", data=body,
                              headers={"Content-Type": "application/json"}) as resp:
            raw = await resp.read()
            status = resp.status
        if status == 202:
            break
        if status != 409:  # 409: the previous run's lock is not released yet
            raise RuntimeError(f"POST runs answered {status}: {raw[:200]!r}")
        await asyncio.sleep(0.002)
    else:
        raise RuntimeError("the previous run never released the run lock")
    t202 = time.perf_counter()
    run_id = orjson.loads(raw)["run_id"]
    # The same stream on the daemon's socket, opened beside it: what the front adds.
    readers = await asyncio.gather(open_sse(live.target, run_id, timed=True),
                                   open_sse(live.observer, run_id, timed=True))
    await asyncio.wait_for(asyncio.gather(*(r.closed for r in readers)), 120)
    for reader in readers:
        if reader.status != 200 or not reader.frames.ended_terminal:
            raise RuntimeError(f"run {run_id}: status {reader.status}, "
                               f"last {reader.frames.last_frame[:200]!r}")
    frames, direct = (r.frames.timed_frames() for r in readers)
    first = min(t for _, kind, t, _ in frames if kind == "output.delta")
    first_direct = min(t for _, kind, t, _ in direct if kind == "output.delta")
    return {"run_id": run_id, "created": (t202 - t0) * 1000, "first": (first - t0) * 1000,
            "done": (frames[-1][2] - t0) * 1000,
            "front_added_first": (first - first_direct) * 1000,
            "direct_frames": [(f"{i:02d} {kind}", (t - t0) * 1000)
                              for i, (_, kind, t, _) in enumerate(direct)
                              if kind != "output.delta" or i == 0 or direct[i - 1][1] != kind]}


def hop_breakdown(runs: list[dict[str, Any]]) -> dict[str, float]:
    """Median ms after the POST of each frame's arrival on the daemon's socket (the first of
    a run of deltas only), over the runs given: where between create and done the time goes.
    A frame arrives when its batch is committed and published, so each step is a commit."""
    by_frame: dict[str, list[float]] = {}
    for run in runs:
        for label, ms in run["direct_frames"]:
            by_frame.setdefault(label, []).append(ms)
    return {label: round(pct(xs, 50), 2) for label, xs in sorted(by_frame.items())}


def first_delta_frames(run: dict[str, Any]) -> list[tuple[str, float]]:
    """A run's frames on the daemon's socket up to its first output.delta."""
    frames: list[tuple[str, float]] = []
    for label, ms in run["direct_frames"]:
        frames.append((label, ms))
        if label.endswith("output.delta"):
            break
    return frames


def _rounded(ms: dict[str, float]) -> dict[str, float]:
    return {label: round(value, 2) for label, value in ms.items()}


async def bench_run_path(quick: bool, owned: Owned) -> list[Figure]:
    """See the module docstring."""
    samples, long_samples = (15, 3) if quick else (60, 10)
    live = await open_live(owned, "lprp", 0)
    front = aiohttp.ClientSession(base_url=f"http://127.0.0.1:{live.target.where}",
                                  headers=live.target.headers)
    status = await call(live.direct, "GET", "host")
    bare = BareA2A(status["a2a_url"])
    try:
        await bare.open()
        for _ in range(3):  # warm-up: connections, the card, first-run caches
            await through_front(live, front, ONE_TOKEN)
            await bare.send(ONE_TOKEN)
        ours: list[dict[str, Any]] = []
        floor: list[tuple[float, float, float]] = []
        for i in range(samples):
            if i % 2 == 0:
                ours.append(await through_front(live, front, ONE_TOKEN))
                floor.append(await bare.send(ONE_TOKEN))
            else:
                floor.append(await bare.send(ONE_TOKEN))
                ours.append(await through_front(live, front, ONE_TOKEN))
        long_runs: list[dict[str, Any]] = []
        long_bare: list[tuple[float, float, float]] = []
        for i in range(long_samples):
            if i % 2 == 0:
                long_runs.append(await through_front(live, front, LONG))
                long_bare.append(await bare.send(LONG))
            else:
                long_bare.append(await bare.send(LONG))
                long_runs.append(await through_front(live, front, LONG))
    finally:
        await bare.close()
        await front.close()
        await live.close(owned)
    breakdown = {"post_to_202": pct([r["created"] for r in ours], 50),
                 **hop_breakdown(ours),
                 "front_added_to_first_delta": pct([r["front_added_first"] for r in ours], 50),
                 "floor_first_byte": pct([b for _, _, b in floor], 50),
                 "floor_first_artifact": pct([f for f, _, _ in floor], 50)}
    long_ours = [r["first"] for r in long_runs]
    long_floor = [f for f, _, _ in long_bare]
    # The long answer's frames up to its first delta (the rest is its stream).
    long_breakdown = {"post_to_202": pct([r["created"] for r in long_runs], 50),
                      **hop_breakdown([{"direct_frames": first_delta_frames(r)}
                                       for r in long_runs]),
                      "front_added_to_first_delta": pct(
                          [r["front_added_first"] for r in long_runs], 50),
                      "floor_first_byte": pct([b for _, _, b in long_bare], 50),
                      "floor_first_artifact": pct(long_floor, 50)}
    first = [r["first"] for r in ours]
    done = [r["done"] for r in ours]
    created = [r["created"] for r in ours]
    f_first = [f for f, _, _ in floor]
    f_done = [d for _, d, _ in floor]
    notes = {"samples": samples, "long_samples": long_samples, "via": live.via,
             "post_202_ms": {"p50": pct(created, 50), "p99": pct(created, 99)},
             "breakdown_ms_after_post_p50": breakdown,
             "long_breakdown_ms_after_post_p50": long_breakdown,
             "floor_ms": {"first_p50": pct(f_first, 50), "first_p99": pct(f_first, 99),
                          "done_p50": pct(f_done, 50),
                          "long_first_p50": pct(long_floor, 50)}}
    log(f"run_path: first output p50 {pct(first, 50):.1f} (floor {pct(f_first, 50):.1f}) "
        f"p99 {pct(first, 99):.1f} (floor {pct(f_first, 99):.1f}) ms; done p50 "
        f"{pct(done, 50):.1f} (floor {pct(f_done, 50):.1f}); 10k first token p50 "
        f"{pct(long_ours, 50):.1f} (floor {pct(long_floor, 50):.1f}) ms; breakdown "
        f"{_rounded(breakdown)}; 10k breakdown {_rounded(long_breakdown)}")
    what = "the same request straight to the same Host, a bare A2A client, same run"
    return [
        Figure("run_path.first_output_p50", pct(first, 50), "ms", pct(f_first, 50), what,
               Target("margin", "<=", 4.0), notes),
        Figure("run_path.first_output_p99", pct(first, 99), "ms", pct(f_first, 99), what,
               Target("margin", "<=", 10.0)),
        Figure("run_path.done_p50", pct(done, 50), "ms", pct(f_done, 50), what,
               Target("margin", "<=", 5.0)),
        Figure("run_path.done_p99", pct(done, 99), "ms", pct(f_done, 99), what, None),
        Figure("run_path.long_first_token_p50", pct(long_ours, 50), "ms",
               pct(long_floor, 50), what + f" ({LONG_TOKENS:,} tokens)",
               Target("margin", "<=", 5.0)),
    ]


async def _first_run(owned: Owned, prewarm: bool) -> float:
    stack = owned.start(owned.project("lpfr"),
                        extra_env={"LLAMON_PLAYGROUND_PREWARM": "1" if prewarm else "0"})
    try:
        async with direct_session(stack) as http:
            deadline = time.monotonic() + READY_WAIT_S
            while prewarm:
                health = await call(http, "GET", "/health")
                if health["database"] != "not_opened":
                    raise RuntimeError(f"a prewarm opened history: {health['database']}")
                if health["host"]["state"] == "ready":
                    break
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the prewarmed Host is not Ready: {health['host']}")
                await _pause()
            session = await call(http, "POST", "sessions", {"title": "first"}, want=201)
            t0 = time.perf_counter()
            run_id = await start_run(http, session["id"], ONE_TOKEN)
            _, last, _ = await count_sse(http, run_id)
            elapsed = (time.perf_counter() - t0) * 1000
            if COMPLETED not in last:
                raise RuntimeError(f"the first run did not complete: {last[-200:]!r}")
            return elapsed
    finally:
        owned.close_stack(stack)


async def _pause() -> None:
    await asyncio.sleep(0.02)  # a poll of /health, the way a page would find the Host Ready


async def bench_first_run(quick: bool, owned: Owned) -> list[Figure]:
    """See the module docstring."""
    reps = 3 if quick else 5
    warm: list[float] = []
    cold: list[float] = []
    for i in range(reps):
        for prewarm in ((True, False) if i % 2 == 0 else (False, True)):
            (warm if prewarm else cold).append(await _first_run(owned, prewarm))
    log(f"first_run: prewarmed p50 {pct(warm, 50):.0f} ms, on demand p50 {pct(cold, 50):.0f} "
        f"ms ({reps} daemons each)")
    return [Figure("first_run.create_to_done_p50", pct(warm, 50), "ms", pct(cold, 50),
                   "the same first run, the Host started on demand (prewarm off), same run",
                   Target("value", "<=", 150.0),
                   {"prewarmed_ms": warm, "on_demand_ms": cold})]
