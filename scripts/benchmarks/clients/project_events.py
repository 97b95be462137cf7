"""A follower of the project's event stream (GET /events): Host states and ended runs, timed."""

from __future__ import annotations

import asyncio
import time

import aiohttp
import orjson

from llamon_playground.common.contract import ACTIVE_STATUSES, API_PREFIX


class ProjectEventsTap:
    """Follows GET /events on the daemon socket; records (arrival, state, generation)."""

    def __init__(self, http: aiohttp.ClientSession) -> None:
        self.http = http
        self.seen: list[tuple[float, str, int | None]] = []
        self.ended: set[str] = set()  # runs whose terminal run.status arrived
        self._changed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._opened = asyncio.Event()

    async def start(self) -> None:
        """Open the stream (the reading task is ours until `close`)."""
        self._task = asyncio.create_task(self._read())
        await asyncio.wait_for(self._opened.wait(), 10)

    async def _read(self) -> None:
        async with self.http.get(f"{API_PREFIX}/events",
                                 timeout=aiohttp.ClientTimeout(total=None)) as resp:
            if resp.status != 200:
                raise RuntimeError(f"/events answered {resp.status}")
            self._opened.set()
            buf = b""
            async for chunk in resp.content.iter_any():
                now = time.perf_counter()
                buf += chunk
                while b"\n\n" in buf:
                    frame, buf = buf.split(b"\n\n", 1)
                    lines = dict(line.split(b": ", 1) for line in frame.split(b"\n")
                                 if b": " in line and not line.startswith(b":"))
                    if lines.get(b"event") == b"host.state":
                        doc = orjson.loads(lines[b"data"])
                        self.seen.append((now, doc["state"], doc.get("generation")))
                    elif lines.get(b"event") == b"run.status":
                        doc = orjson.loads(lines[b"data"])
                        if doc["status"] not in ACTIVE_STATUSES:
                            self.ended.add(doc["run_id"])
                    else:
                        continue
                    self._changed.set()
                    self._changed = asyncio.Event()

    async def wait_for(self, state: str, min_generation: int, since: int,
                       timeout: float) -> float:
        """Arrival time of the first `state` with generation >= min_generation after index."""
        deadline = time.monotonic() + timeout
        while True:
            for t, s, g in self.seen[since:]:
                if s == state and g is not None and g >= min_generation:
                    return t
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no host.state {state} generation >= {min_generation} "
                                   f"within {timeout} s; saw {self.seen[since:]}")
            changed = self._changed
            try:
                await asyncio.wait_for(changed.wait(), left)
            except TimeoutError:
                pass

    async def wait_run_end(self, run_id: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while run_id not in self.ended:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"run {run_id} did not end within {timeout} s")
            changed = self._changed
            try:
                await asyncio.wait_for(changed.wait(), left)
            except TimeoutError:
                pass

    def phases(self, since: int, t0: float) -> dict[str, float]:
        """ms from t0 to the first stopping / stopped / starting / ready seen after `since`."""
        out: dict[str, float] = {}
        for t, s, _ in self.seen[since:]:
            if s not in out:
                out[s] = round((t - t0) * 1000, 1)
        return out

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
