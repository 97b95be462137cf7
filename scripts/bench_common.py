"""Helpers shared by the benchmark sections (bench_core, bench_host, bench_load).

Only the benchmark imports this; nothing under daemon/, api/ or host_manager/ imports scripts/.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import psutil

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.support.procs import Stack, kill_tree, process_tree  # noqa: E402

P = "/api/playground/v1"
MB = 1024 * 1024
FRAME_RE = re.compile(rb"id: (\d+)\nevent: ([^\n]*)\n")
TERMINAL_STATUSES = (b'"status":"completed"', b'"status":"failed"', b'"status":"cancelled"',
                     b'"status":"interrupted"', b'"status":"input_required"')


# -- the front's token ----------------------------------------------------------------------------

def front_token(stack: Stack) -> str | None:
    """The token the project's fronts ask for (None when the front runs without one).

    A front with token auth keeps it in `<runtime dir>/front.token` (0600) before it prints
    its URL; Stack.start_front has no notion of it (yet), so read it from there.
    """
    token = getattr(stack, "front_token", None)
    if isinstance(token, str) and token:
        return token
    try:
        value = stack.settings.front_token_path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return value or None


def front_headers(stack: Stack) -> dict[str, str]:
    token = front_token(stack)
    return {"Authorization": f"Bearer {token}"} if token else {}


def front_session(stack: Stack, url: str) -> aiohttp.ClientSession:
    return aiohttp.ClientSession(base_url=url, headers=front_headers(stack))


def direct_session(stack: Stack, limit: int = 100) -> aiohttp.ClientSession:
    return aiohttp.ClientSession(
        connector=aiohttp.UnixConnector(path=str(stack.settings.socket_path), limit=limit),
        base_url="http://daemon")


class FrontUnavailable(RuntimeError):
    """The front could not be started or does not let the benchmark in."""


async def start_checked_front(stack: Stack) -> tuple[int, str, dict[str, str]]:
    """Start a front, check that an authenticated GET through it works; (pid, url, headers)."""
    try:
        front, url = stack.start_front()
    except Exception as exc:
        raise FrontUnavailable(f"the front did not start: {exc}") from exc
    headers = front_headers(stack)
    async with aiohttp.ClientSession(base_url=url, headers=headers) as http:
        try:
            async with http.get(f"{P}/sessions") as resp:
                body = await resp.read()
                if resp.status != 200:
                    raise FrontUnavailable(f"GET /sessions through the front answered "
                                           f"{resp.status}: {body[:200]!r}")
        except aiohttp.ClientError as exc:
            raise FrontUnavailable(f"the front does not answer: {exc}") from exc
    return front.pid, url, headers


# -- JSON over the daemon socket / front ------------------------------------------------------

async def call(http: aiohttp.ClientSession, method: str, path: str, body: Any = None,
               want: int | tuple[int, ...] = 200, timeout: float = 60.0) -> Any:
    import orjson
    wants = (want,) if isinstance(want, int) else want
    data = orjson.dumps(body) if body is not None else None
    headers = {"Content-Type": "application/json"} if data is not None or method != "GET" else {}
    async with http.request(method, path if path.startswith("/") else f"{P}/{path}", data=data,
                            headers=headers,
                            timeout=aiohttp.ClientTimeout(total=timeout)) as resp:
        raw = await resp.read()
        if resp.status not in wants:
            raise RuntimeError(f"{method} {path} answered {resp.status}: {raw[:300]!r}")
        return orjson.loads(raw) if raw else None


async def start_run(http: aiohttp.ClientSession, session_id: str, text: str,
                    wait_s: float = 30.0) -> str:
    """POST a run; retry 409 while the previous run's lock is not released yet (bounded)."""
    import orjson
    body = orjson.dumps({"parts": [{"kind": "text", "text": text}]})
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        async with http.post(f"{P}/sessions/{session_id}/runs", data=body,
                             headers={"Content-Type": "application/json"}) as resp:
            raw = await resp.read()
            if resp.status == 202:
                return str(orjson.loads(raw)["run_id"])
            if resp.status != 409:
                raise RuntimeError(f"POST runs answered {resp.status}: {raw[:300]!r}")
        await asyncio.sleep(0.01)
    raise RuntimeError("the previous run never released the run lock")


# -- a lean SSE reader (asyncio.Protocol): every id, in order, with arrival times ------------

class RawHttpStream(asyncio.Protocol):
    """One raw HTTP/1.1 request whose answer is read as it arrives: the head, then the
    (de-chunked) body bytes appended to `received`. Cheap enough for hundreds of clients in
    one process; subclasses consume `received` in `on_body`."""

    def __init__(self, request: bytes) -> None:
        self.request = request
        self.transport: asyncio.Transport | None = None
        self.head = bytearray()
        self.head_done = False
        self.status: int | None = None
        self.chunked = False
        self.received = bytearray()
        self.complete = False  # the zero-length chunk (end of the answer) arrived
        self._dechunker = Dechunker()
        self.closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        transport.write(self.request)

    def data_received(self, data: bytes) -> None:
        t = time.perf_counter()
        if not self.head_done:
            self.head += data
            end = self.head.find(b"\r\n\r\n")
            if end < 0:
                return
            head = bytes(self.head[:end])
            data = bytes(self.head[end + 4:])
            self.head_done = True
            self.status = int(head.split(b" ", 2)[1])
            self.chunked = b"transfer-encoding: chunked" in head.lower()
            self.on_head(data)
        if self.chunked:
            self._dechunker.feed(data, self.received)
            self.complete = self._dechunker.complete
        else:
            self.received += data
        self.on_body(t)
        if self.complete and self.transport is not None:
            self.transport.close()

    def on_head(self, first_body_bytes: bytes) -> None:
        """The head arrived (status and transfer encoding are known)."""

    def on_body(self, arrived: float) -> None:
        """More body bytes are in `received` (`arrived`: perf_counter of the read)."""

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closed.done():
            self.closed.set_result(None)


class SseReader(RawHttpStream):
    """One HTTP/1.1 GET of a run's SSE stream; records every frame's id as it arrives.

    Complete frames are parsed with one regex per read, and the text is dropped.
    """

    def __init__(self, request: bytes, keep_body: bool = False) -> None:
        super().__init__(request)
        self.keep_body = keep_body
        self.body = bytearray()
        self.seqs: list[int] = []
        self.last_kind = b""
        self.last_frame = b""
        self.nbytes = 0
        self.t_connect = time.perf_counter()
        self.t_first: float | None = None
        self.t_last: float | None = None
        self.error: str | None = None
        # the answer's head arrived
        self.headed: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def on_head(self, first_body_bytes: bytes) -> None:
        if self.status != 200:
            self.error = f"status {self.status}: {first_body_bytes[:200]!r}"
        if not self.headed.done():
            self.headed.set_result(None)

    def on_body(self, arrived: float) -> None:
        self._frames()

    def _frames(self) -> None:
        pending = self.received
        end = pending.rfind(b"\n\n")
        if end < 0:
            return
        end += 2
        block = bytes(pending[:end])
        del pending[:end]
        self.nbytes += len(block)
        if self.keep_body:
            self.body += block
        found = FRAME_RE.findall(block)
        if found:
            now = time.perf_counter()
            if self.t_first is None:
                self.t_first = now
            self.t_last = now
            self.seqs.extend(int(s) for s, _ in found)
            self.last_kind = found[-1][1]
            start = block.rfind(b"id: ")
            self.last_frame = block[start:]

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        if not self.headed.done():
            self.headed.set_result(None)

    @property
    def ended_terminal(self) -> bool:
        return self.last_kind == b"run.status" and any(
            s in self.last_frame for s in TERMINAL_STATUSES)


def sse_request(run_id: str, host: str, headers: dict[str, str] | None = None,
                after: int | None = None) -> bytes:
    query = f"?after={after}" if after is not None else ""
    extra = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
    return (f"GET {P}/runs/{run_id}/events{query} HTTP/1.1\r\nHost: {host}\r\n"
            f"Accept: text/event-stream\r\n{extra}Connection: close\r\n\r\n").encode()


@dataclass(frozen=True)
class SseTarget:
    """Where an SSE client connects: the front (TCP) or the daemon socket (Unix)."""

    kind: str  # "tcp" or "unix"
    where: Any  # port or socket path
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def host_header(self) -> str:
        return f"127.0.0.1:{self.where}" if self.kind == "tcp" else "daemon"


async def open_sse(target: SseTarget, run_id: str, keep_body: bool = False,
                   after: int | None = None) -> SseReader:
    loop = asyncio.get_running_loop()
    proto = SseReader(sse_request(run_id, target.host_header, target.headers, after), keep_body)
    if target.kind == "tcp":
        await loop.create_connection(lambda: proto, "127.0.0.1", target.where)
    else:
        await loop.create_unix_connection(lambda: proto, target.where)
    return proto


def parse_sse_body(body: bytes) -> tuple[list[int], bytes, bytes]:
    """(every id, last event kind, last frame) of a de-chunked SSE body."""
    found = FRAME_RE.findall(body)
    start = body.rfind(b"id: ")
    return [int(s) for s, _ in found], (found[-1][1] if found else b""), body[start:]


def dechunk(raw: bytes) -> tuple[bytes, bool]:
    """Body of a complete chunked transfer; (body, saw the final zero-length chunk)."""
    out = bytearray()
    pos = 0
    while True:
        eol = raw.find(b"\r\n", pos)
        if eol < 0:
            return bytes(out), False
        size = int(raw[pos:eol].split(b";")[0], 16)
        if size == 0:
            return bytes(out), True
        start = eol + 2
        out += raw[start:start + size]
        pos = start + size + 2


def check_ids(name: str, got: list[int], want: list[int]) -> None:
    """Every id once, in order, nothing missing, nothing extra: raise (loudly) otherwise."""
    if got == want:
        return
    dup = len(got) - len(set(got))
    missing = sorted(set(want) - set(got))
    extra = sorted(set(got) - set(want))
    unordered = sum(1 for a, b in zip(got, got[1:]) if b <= a)
    raise RuntimeError(f"{name}: got {len(got)} ids, want {len(want)}: {len(missing)} missing "
                       f"(first {missing[:5]}), {len(extra)} unexpected (first {extra[:5]}), "
                       f"{dup} duplicated, {unordered} out of order")


# -- process figures --------------------------------------------------------------------------

def rss(pid: int) -> int:
    try:
        return int(psutil.Process(pid).memory_info().rss)
    except psutil.Error:
        return 0


def cpu_of(pid: int) -> float:
    try:
        t = psutil.Process(pid).cpu_times()
        return float(t.user + t.system)
    except psutil.Error:
        return 0.0


class RssSampler:
    """Samples the RSS of some pids every `interval` s in a task; keeps first, peak, last."""

    def __init__(self, pids: dict[str, int], interval: float = 0.05) -> None:
        self.pids = pids
        self.interval = interval
        self.first = {name: rss(pid) for name, pid in pids.items()}
        self.peak = dict(self.first)
        self.last = dict(self.first)
        self.samples = 0
        self._task: asyncio.Task[None] | None = None

    def _sample(self) -> None:
        for name, pid in self.pids.items():
            value = rss(pid)
            self.last[name] = value
            self.peak[name] = max(self.peak[name], value)
        self.samples += 1

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            self._sample()

    def __enter__(self) -> RssSampler:
        self._task = asyncio.get_running_loop().create_task(self._loop())
        return self

    def __exit__(self, *exc: object) -> None:
        if self._task is not None:
            self._task.cancel()
        self._sample()

    def mb(self) -> dict[str, dict[str, float]]:
        return {name: {"first": round(self.first[name] / MB, 1),
                       "peak": round(self.peak[name] / MB, 1),
                       "last": round(self.last[name] / MB, 1)} for name in self.pids}


class CpuMeter:
    """CPU seconds some pids (and this process) used between enter and exit."""

    def __init__(self, pids: dict[str, int]) -> None:
        self.pids = pids
        self.used: dict[str, float] = {}
        self.wall = 0.0

    def __enter__(self) -> CpuMeter:
        self._t0 = time.perf_counter()
        self._c0 = {name: cpu_of(pid) for name, pid in self.pids.items()}
        self._own0 = time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self._t0
        self.used = {name: cpu_of(pid) - self._c0[name] for name, pid in self.pids.items()}
        self.used["bench_client"] = time.process_time() - self._own0

    def pct(self) -> dict[str, float]:
        """% of one core, averaged over the window."""
        return {name: round(100 * s / self.wall, 1) if self.wall else 0.0
                for name, s in self.used.items()}


# -- processes of our own outside a Stack (the floor Host, idle references) -----------------

class Spawned:
    """A child in its own session (process group); `stop` signals the group, then kills."""

    def __init__(self, argv: list[str], cwd: Path, env: dict[str, str],
                 log_path: Path | None = None) -> None:
        self._log = open(log_path, "ab") if log_path else None  # noqa: SIM115
        out = self._log if self._log is not None else subprocess.DEVNULL
        self.popen = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                      stdout=out, stderr=subprocess.STDOUT,
                                      start_new_session=True)
        self.pid = self.popen.pid

    def stop(self, grace: float = 3.0) -> None:
        try:
            kill_tree(process_tree(self.pid) or [], grace=grace)
        finally:
            if self.popen.poll() is None:
                try:
                    os.killpg(self.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            try:
                self.popen.wait(10)
            except subprocess.TimeoutExpired:
                pass
            if self._log is not None:
                self._log.close()


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def median_or_none(xs: list[float]) -> float | None:
    import statistics
    return statistics.median(xs) if xs else None


class Dechunker:
    """HTTP/1.1 chunked transfer decoding, fed as bytes arrive (the benches' raw clients)."""

    def __init__(self) -> None:
        self._raw = bytearray()
        self._remaining = 0
        self._need_crlf = False
        self.complete = False

    def feed(self, data: bytes, out: bytearray) -> None:
        """Decode what `data` completes and append the payload bytes to `out`."""
        raw = self._raw
        raw += data
        while raw:
            if self._remaining:
                take = min(self._remaining, len(raw))
                out += raw[:take]
                del raw[:take]
                self._remaining -= take
                if not self._remaining:
                    self._need_crlf = True
            elif self._need_crlf:
                if len(raw) < 2:
                    return
                del raw[:2]
                self._need_crlf = False
            else:
                eol = raw.find(b"\r\n")
                if eol < 0:
                    return
                size = int(bytes(raw[:eol]).split(b";")[0], 16)
                del raw[:eol + 2]
                if size == 0:
                    self.complete = True
                    return
                self._remaining = size
