"""The three systems the ADK comparison drives with one client: the Playground (daemon, front
and the bundled example's Host, as `scripts/up` runs them) and `adk api_server` with
in-memory and with SQLite sessions. Each starts on loopback in process groups of its own,
answers `tokens N` runs, and says how much memory (PSS) its processes hold."""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import orjson
import psutil

from llamon_playground.common.contract import RunStatus
from llamon_playground.harness.processes import Proc
from llamon_playground.harness.waiting import Deadline
from scripts.benchmarks.clients.client import COMPLETED, P, call, direct_session, front_headers
from scripts.benchmarks.compare.adk_agent import APP_NAME, save_agent, write_agents_dir
from scripts.benchmarks.owned import Owned
from scripts.benchmarks.stack import Stack, free_port, process_tree

READY_WAIT_S = 90.0  # ADK imports a lot on a cold start; two busy cores
RUN_TIMEOUT = aiohttp.ClientTimeout(total=300)
ADK_USER = "bench"
PG_DELTA = b"event: output.delta"
CANCELLED = f'"status":"{RunStatus.CANCELLED}"'.encode()
ADK_FRAME = b"data: "


@dataclass
class Sample:
    """One run seen by the client, ms after the request was sent."""

    created: float  # the Playground's 202; ADK's response headers
    first: float  # the first token's frame read
    done: float  # the stream's end (the run's terminal status read; cancelled if `cut`)
    frames: int  # token frames read (the Playground's output.delta, ADK's SSE events)


class Counter:
    """Counts a marker in a byte stream read in chunks (a marker may straddle two)."""

    def __init__(self, marker: bytes) -> None:
        self.marker = marker
        self.count = 0
        self._carry = b""

    def feed(self, chunk: bytes) -> int:
        """Occurrences of the marker that this chunk completes."""
        buf = self._carry + chunk
        found = buf.count(self.marker)
        # Shorter than the marker: an occurrence inside it cannot be counted twice.
        self._carry = buf[-(len(self.marker) - 1):]
        self.count += found
        return found


def pss_bytes(pids: list[int]) -> int:
    """Proportional set size of these processes and all their descendants, summed."""
    total = 0
    seen: set[int] = set()
    for pid in pids:
        for proc in process_tree(pid):
            if proc.pid in seen:
                continue
            seen.add(proc.pid)
            try:
                total += int(proc.memory_full_info().pss)
            except psutil.Error:
                pass
    return total


async def read_stream(resp: aiohttp.ClientResponse, marker: bytes, t0: float,
                      on_first: Callable[[], Awaitable[None]] | None = None
                      ) -> tuple[float | None, int, bytes]:
    """Read an SSE answer to its end, `on_first` awaited once the first marker is read:
    (ms to the first marker, markers, the last bytes)."""
    counter = Counter(marker)
    first: float | None = None
    tail = b""
    async for chunk in resp.content.iter_any():
        tail = (tail + chunk)[-600:]
        if counter.feed(chunk) and first is None:
            first = (time.perf_counter() - t0) * 1000
            if on_first is not None:
                await on_first()
    return first, counter.count, tail


class Playground:
    """The daemon and a front for a fresh copy of the bundled example, its Host prewarmed
    (the default `scripts/up` has); runs go through the front as a browser's would."""

    label = "Playground"

    def __init__(self, owned: Owned) -> None:
        self._owned = owned
        self._stack: Stack | None = None
        self._url = ""
        self._headers: dict[str, str] = {}
        self._session = ""

    async def start(self, http: aiohttp.ClientSession) -> float:
        """Start it; ms from the spawn to the Host Ready with the front's URL known."""
        project = self._owned.project("lpadk")
        runtime = Path(tempfile.mkdtemp(prefix="rt", dir=project.parent))
        stack = self._owned.stack(project, runtime, {"LLAMON_PLAYGROUND_PREWARM": "1"})
        self._stack = stack
        t0 = time.perf_counter()
        _front, self._url = stack.start_daemon_and_front()
        deadline = Deadline(READY_WAIT_S, "the prewarmed Host Ready")
        async with direct_session(stack) as direct:
            while True:
                health = await call(direct, "GET", "/health")
                if health["host"]["state"] == "ready":
                    break
                deadline.check(health["host"])
                await asyncio.sleep(0.01)  # a poll, as the page polls /health
        ready = (time.perf_counter() - t0) * 1000
        self._headers = front_headers(stack)
        await self.new_session(http)
        return ready

    async def new_session(self, http: aiohttp.ClientSession) -> None:
        """Runs from now on go to a new session."""
        async with http.post(f"{self._url}{P}/sessions", json={"title": "adk comparison"},
                             headers=self._headers) as resp:
            if resp.status != 201:
                raise RuntimeError(f"POST sessions answered {resp.status}")
            self._session = str((await resp.json())["id"])

    async def run(self, http: aiohttp.ClientSession, tokens: int, cut: bool = False) -> Sample:
        """One `tokens N` run: POST it, open its event stream, read it to the end; `cut`:
        cancel the run once its first token is read (`DELETE /runs/{id}`), then read on to
        its end, `cancelled`."""
        run_id, t0, created = await self._create(http, {"parts": [
            {"kind": "text", "text": f"tokens {tokens}"}]})

        async def cancel() -> None:
            async with http.delete(f"{self._url}{P}/runs/{run_id}", headers={
                    **self._headers, "Content-Type": "application/json"}) as resp:
                await resp.read()
                if resp.status not in (200, 202, 409):  # 409: it had ended already
                    raise RuntimeError(f"DELETE the run answered {resp.status}")
            # Read on: the run's end frees the session for the next run.

        first, frames = await self._read(http, run_id, t0, cancel if cut else None)
        return Sample(created, first, (time.perf_counter() - t0) * 1000, frames)

    async def save_run(self, http: aiohttp.ClientSession, n: int) -> float:
        """Studio's save-then-run: a file of the Host's written, a run POSTed naming it in
        `changed_files` (it runs on the Host's new generation); ms from the write to the
        run's first output."""
        assert self._stack is not None
        touched = self._stack.project / "app" / "__init__.py"
        original = touched.read_bytes().split(b"\n# saved ")[0]
        t0 = time.perf_counter()
        touched.write_bytes(original + f"\n# saved {n}\n".encode())
        run_id, _, _ = await self._create(http, {
            "parts": [{"kind": "text", "text": "tokens 1"}],
            "changed_files": ["app/__init__.py"]})
        first, _ = await self._read(http, run_id, t0)
        return first

    async def _create(self, http: aiohttp.ClientSession, payload: dict[str, object]
                      ) -> tuple[str, float, float]:
        """POST a run: (its id, when the accepted POST was sent, ms to its 202)."""
        body = orjson.dumps(payload)
        headers = {**self._headers, "Content-Type": "application/json"}
        for _attempt in range(1000):
            t0 = time.perf_counter()
            async with http.post(f"{self._url}{P}/sessions/{self._session}/runs", data=body,
                                 headers=headers) as resp:
                raw = await resp.read()
                status = resp.status
            if status == 202:
                return str(orjson.loads(raw)["run_id"]), t0, (time.perf_counter() - t0) * 1000
            if status != 409:  # 409: the previous run's lock is not released yet
                raise RuntimeError(f"POST runs answered {status}: {raw[:200]!r}")
            await asyncio.sleep(0.002)
        raise RuntimeError("the previous run never released the session's run lock")

    async def _read(self, http: aiohttp.ClientSession, run_id: str, t0: float,
                    on_first: Callable[[], Awaitable[None]] | None = None
                    ) -> tuple[float, int]:
        """Read a run's events to its end: (ms from t0 to its first output, its deltas)."""
        async with http.get(f"{self._url}{P}/runs/{run_id}/events", headers=self._headers,
                            timeout=RUN_TIMEOUT) as resp:
            if resp.status != 200:
                raise RuntimeError(f"the run's events answered {resp.status}")
            first, frames, tail = await read_stream(resp, PG_DELTA, t0, on_first)
        ended = COMPLETED in tail or (on_first is not None and CANCELLED in tail)
        if first is None or not ended:
            raise RuntimeError(f"run {run_id} did not stream and complete: {tail[-300:]!r}")
        return first, frames

    def pss(self) -> int:
        stack = self._stack
        if stack is None or stack.daemon is None:
            return 0
        return pss_bytes([stack.daemon.pid, *(f.pid for f in stack.fronts)])

    def close(self) -> None:
        if self._stack is not None:
            self._owned.close_stack(self._stack)
            self._stack = None


class Adk:
    """`adk api_server` on the model-free agent, with in-memory or SQLite sessions; runs go
    to `/run_sse` (streaming) in one session created after the start."""

    def __init__(self, owned: Owned, adk_bin: str, sessions: str, reload: bool = False
                 ) -> None:
        self.label = f"ADK {'in memory' if sessions == 'memory' else 'SQLite'}"
        self._owned = owned
        self._bin = adk_bin
        self._sessions = sessions
        self._reload = reload  # --reload_agents: a saved agent is loaded again
        self._agents = Path()
        self._proc: Proc | None = None
        self._url = ""
        self._session = ""

    async def start(self, http: aiohttp.ClientSession) -> float:
        """Start it; ms from the spawn to its first answer (`GET /list-apps` 200)."""
        work = self._owned.tmpdir("lpadk")
        agents = self._agents = write_agents_dir(work)
        uri = ("memory://" if self._sessions == "memory"
               else f"sqlite:///{work / 'sessions.db'}")  # sqlite:////tmp/...: absolute
        port = free_port()
        self._url = f"http://127.0.0.1:{port}"
        t0 = time.perf_counter()
        self._proc = Proc([self._bin, "api_server", "--host", "127.0.0.1", "--port", str(port),
                           "--session_service_uri", uri, "--artifact_service_uri", "memory://",
                           *(["--reload_agents"] if self._reload else []),
                           str(agents)], dict(os.environ), work / "adk.log", work)
        deadline = Deadline(READY_WAIT_S, f"{self.label} answering")
        while True:
            if self._proc.popen.poll() is not None:
                raise RuntimeError(f"{self.label} exited early:\n{self._proc.output()[-2000:]}")
            try:
                async with http.get(f"{self._url}/list-apps") as resp:
                    if resp.status == 200:
                        break
            except aiohttp.ClientError:
                pass
            deadline.check("no answer")
            await asyncio.sleep(0.01)
        ready = (time.perf_counter() - t0) * 1000
        await self.new_session(http)
        return ready

    async def new_session(self, http: aiohttp.ClientSession) -> None:
        """Runs from now on go to a new session."""
        async with http.post(f"{self._url}/apps/{APP_NAME}/users/{ADK_USER}/sessions",
                             json={}) as resp:
            if resp.status != 200:
                raise RuntimeError(f"{self.label}: create session answered {resp.status}: "
                                   f"{(await resp.read())[:300]!r}")
            self._session = str((await resp.json())["id"])

    async def run(self, http: aiohttp.ClientSession, tokens: int, cut: bool = False) -> Sample:
        """One `tokens N` run: POST /run_sse (streaming), read its events to the end, `cut`
        or not: a closed connection leaves the server making the rest of the answer for up to
        ~0.7 s, which would land on the next system's run (and ADK's whole 10,000 tokens
        take ~2.7 s here)."""
        t0 = time.perf_counter()
        created, first, frames, tail = await self._run_sse(http, tokens, ADK_FRAME, t0)
        done = (time.perf_counter() - t0) * 1000
        # Every token and the final event: an error would be one frame of its own.
        if first is None or frames != tokens + 1 or b'"partial"' in tail.rsplit(b"data: ")[-1]:
            raise RuntimeError(f"{self.label}: {frames} frames for {tokens} tokens, "
                               f"last {tail[-300:]!r}")
        return Sample(created, first, done, frames)

    async def save_run(self, http: aiohttp.ClientSession, n: int) -> float:
        """The agent saved (its tokens marked), then runs until one streams the saved code's
        first token (`--reload_agents` drops the old agent when its watcher sees the write);
        ms from the write to that token."""
        mark = f"s{n}-"
        t0 = time.perf_counter()
        save_agent(self._agents, mark)
        deadline = Deadline(30.0, f"{self.label} streaming the saved agent's output")
        while True:
            _, first, _, _ = await self._run_sse(http, 1, f'"text":"{mark}t0 "'.encode(), t0)
            if first is not None:
                return first
            deadline.check("the old agent's output")

    async def _run_sse(self, http: aiohttp.ClientSession, tokens: int, marker: bytes,
                       t0: float) -> tuple[float, float | None, int, bytes]:
        """POST /run_sse and read it to its end: (ms to the headers, ms to the first marker,
        markers, the last bytes), ms from t0."""
        body = orjson.dumps({"app_name": APP_NAME, "user_id": ADK_USER,
                             "session_id": self._session, "streaming": True,
                             "new_message": {"role": "user",
                                             "parts": [{"text": f"tokens {tokens}"}]}})
        async with http.post(f"{self._url}/run_sse", data=body, timeout=RUN_TIMEOUT,
                             headers={"Content-Type": "application/json"}) as resp:
            created = (time.perf_counter() - t0) * 1000
            if resp.status != 200:
                raise RuntimeError(f"{self.label}: /run_sse answered {resp.status}: "
                                   f"{(await resp.read())[:300]!r}")
            first, frames, tail = await read_stream(resp, marker, t0)
        return created, first, frames, tail

    def pss(self) -> int:
        return pss_bytes([self._proc.pid]) if self._proc is not None else 0

    def close(self) -> None:
        if self._proc is not None:
            self._proc.stop()
            self._proc = None
