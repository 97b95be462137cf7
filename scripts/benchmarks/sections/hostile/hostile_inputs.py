"""The daemon stays responsive and small under hostile inputs (docs/security.md, "Limits"):

  hostile_inputs.<input>   p99 and max of a fixed-rate GET /health probe (20 a second,
                           through the front with a valid token, each probe on its own, so
                           a stall shows as latency, never as fewer probes) while one
                           hostile input is handled; the daemon's peak RSS; every probe
                           must be answered 200
    bundle_200mib_metadata    POST /bundles/import of a bundle whose session metadata
                              holds a 200 MiB string (refused: metadata_too_large)
    run_15mib_metadata        a run POST with a 15 MiB metadata note (refused likewise)
    host_64mib_event          a Host streaming one 64 MiB artifactUpdate
    host_400mib_line          a Host streaming a 400 MiB `data:` line with no newline
    host_600_log_lines        a Host printing 600 log lines of 1 MB
    capture_2000_events       a Host posting 2,000 capture events naming 64 KiB nodes
    host_270k_deltas          a Host streaming 270,000 appended deltas of 1 KiB (a 270 MB
                              answer, over the 256 MiB run output limit: ends
                              host_output_too_large, its text a blob as it arrives)
    run_16mib_text            a run whose one text part is 16 MiB (stored as a blob)
    run_10mib_file            a run with a 10 MiB inline file
    get_huge_run              GET /runs/{id} of the 270k-delta run (an excerpt and a link)
    idle_connections_300      300 TCP connections to the front that send nothing, each
                              closed and opened again in turn, each once a second
                              (scripts/benchmarks/children/idle_flood.py, a process of its own);
                              here every probe opens a connection of its own, so each
                              needs a slot
  baseline: the same probe's p99 with nothing running. Targets: p99 <= 100 ms, max <= 250 ms,
  >= 99 % of probes answered 200, RSS <= 300 MB, and (rss_back_mb) the daemon's RSS 10 s
  after the input within 50 MB of its idle RSS.
"""

from __future__ import annotations

import asyncio
import base64
import io
import os
import signal
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import orjson

from scripts.benchmarks.clients.client import P, call, direct_session, start_checked_front
from scripts.benchmarks.figures import Figure, Target, log, pct
from scripts.benchmarks.meters import MB, RssSampler
from scripts.benchmarks.owned import Owned
from scripts.benchmarks.stack import REPO

HOSTILE_HOST = REPO / "scripts" / "benchmarks" / "children" / "hostile_host.py"
FLOOD = 300
PROBE_RATE = 20.0
PROBE_TIMEOUT = 10.0
IDLE_PROBES = 60
MIB = 1024 * 1024
RSS_SETTLE = 10.0  # seconds after an input when the daemon's RSS must be back near idle


def hostile_project(owned: Owned) -> Path:
    project = owned.project("lphi")
    pyproject = project / "pyproject.toml"
    command = orjson.dumps(["{python}", str(HOSTILE_HOST)]).decode()
    pyproject.write_text(pyproject.read_text().replace(
        'host_command = ["{python}", "-m", "app.host"]', f"host_command = {command}")
        + "warm_start = false\n")
    return project


class Probe:
    """GET /health at a fixed rate, each request a task of its own, until stopped."""

    def __init__(self, http: aiohttp.ClientSession) -> None:
        self.http = http
        self.latencies: list[float] = []
        self.failures: list[str] = []

    async def one(self) -> None:
        t = time.perf_counter()
        try:
            async with self.http.get("/health",
                                     timeout=aiohttp.ClientTimeout(total=PROBE_TIMEOUT)) as resp:
                await resp.read()
                if resp.status != 200:
                    self.failures.append(f"HTTP {resp.status}")
        except (aiohttp.ClientError, TimeoutError) as exc:
            self.failures.append(type(exc).__name__)
        self.latencies.append((time.perf_counter() - t) * 1000)

    async def run(self, stop: asyncio.Event) -> None:
        tasks: list[asyncio.Task[None]] = []
        start = time.perf_counter()
        n = 0
        try:
            while not stop.is_set():
                tasks.append(asyncio.create_task(self.one()))
                n += 1
                delay = start + n / PROBE_RATE - time.perf_counter()
                if delay > 0:
                    try:
                        await asyncio.wait_for(stop.wait(), delay)
                    except TimeoutError:
                        pass
        finally:
            await asyncio.gather(*tasks, return_exceptions=True)


async def probed(http: aiohttp.ClientSession, work: Awaitable[Any]) -> tuple[Probe, Any]:
    probe = Probe(http)
    stop = asyncio.Event()
    task = asyncio.create_task(probe.run(stop))
    try:
        result = await work
        await asyncio.sleep(1.0)  # what the input left behind (a collection, a write) counts
    finally:
        stop.set()
        await task
    return probe, result


async def run_to_end(direct: aiohttp.ClientSession, session: str, text: str) -> dict[str, Any]:
    started = await call(direct, "POST", f"sessions/{session}/runs",
                         {"parts": [{"kind": "text", "text": text}]}, want=202)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        run: dict[str, Any] = await call(direct, "GET", f"runs/{started['run_id']}")
        if run["status"] not in ("queued", "preparing", "running"):
            return run
        await asyncio.sleep(0.2)
    raise RuntimeError(f"run {text} did not end")


def rss_of(pid: int) -> float:
    """A process's resident set now, in MB."""
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024 / MB
    return 0.0


async def run_raw_to_end(direct: aiohttp.ClientSession, session: str,
                         raw: bytes) -> dict[str, Any]:
    status, started = await post_raw(direct, f"sessions/{session}/runs", raw)
    if status != 202:
        raise RuntimeError(f"a run was refused: {started}")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        run: dict[str, Any] = await call(direct, "GET", f"runs/{started['run_id']}")
        if run["status"] not in ("queued", "preparing", "running"):
            return run
        await asyncio.sleep(0.2)
    raise RuntimeError("a run did not end")


async def post_raw(direct: aiohttp.ClientSession, path: str, raw: bytes) -> tuple[int, Any]:
    async with direct.post(f"{P}/{path}", data=io.BytesIO(raw),
                           headers={"Content-Type": "application/json"}) as resp:
        return resp.status, orjson.loads(await resp.read())


async def idle_flood(url: str, headers: dict[str, str], quick: bool) -> tuple[Probe, str]:
    """The probe, on a fresh connection each time, while FLOOD idle connections are held
    open and reopened at the front."""
    port = url.rsplit(":", 1)[1].rstrip("/")
    flood = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "scripts.benchmarks.children.idle_flood", port, str(FLOOD), cwd=REPO,
        stdout=asyncio.subprocess.PIPE, start_new_session=True)
    try:
        async with aiohttp.ClientSession(
                base_url=url, headers=headers,
                connector=aiohttp.TCPConnector(force_close=True)) as fresh:
            probe, _ = await probed(fresh, asyncio.sleep(6.0 if quick else 20.0))
    finally:
        if flood.returncode is None:
            os.kill(flood.pid, signal.SIGTERM)
        out, _ = await flood.communicate()
    opened, closed, failed = (out.decode().split() + ["?"] * 3)[:3]
    return probe, (f"{opened} flood connections opened, {closed} closed by the front first, "
                   f"{failed} not accepted")


def metadata_bundle() -> bytes:
    return orjson.dumps({"format": "llamon.playground.bundle/1", "runs": [], "events": [],
                         "blobs": {}, "sessions": [{"id": "s1", "title": "hostile",
                                                    "metadata": {"note": "-" * (200 * MIB)}}]})


async def bench_hostile_inputs(quick: bool, owned: Owned) -> list[Figure]:
    stack = owned.start(hostile_project(owned))
    try:
        assert stack.daemon is not None
        _, url, headers = await start_checked_front(stack)
        async with aiohttp.ClientSession(base_url=url, headers=headers) as front, \
                direct_session(stack) as direct:
            idle = Probe(front)
            for _ in range(IDLE_PROBES):
                await idle.one()
                await asyncio.sleep(1 / PROBE_RATE)
            session = (await call(direct, "POST", "sessions", {"title": "hostile"},
                                  want=201))["id"]
            big_metadata = orjson.dumps({"parts": [{"kind": "text", "text": "x"}],
                                         "metadata": {"note": "-" * (15 * MIB)}})
            inputs: list[tuple[str, Callable[[], Awaitable[Any]]]] = [
                ("bundle_200mib_metadata",
                 lambda: post_raw(direct, "bundles/import", metadata_bundle())),
                ("run_15mib_metadata",
                 lambda: post_raw(direct, f"sessions/{session}/runs", big_metadata)),
                ("host_64mib_event", lambda: run_to_end(direct, session, "big_event")),
                ("host_400mib_line", lambda: run_to_end(direct, session, "long_line")),
                ("host_600_log_lines", lambda: run_to_end(direct, session, "logs")),
                ("capture_2000_events", lambda: run_to_end(direct, session, "captures")),
            ]
            huge: dict[str, Any] = {}

            async def huge_run() -> dict[str, Any]:
                huge.update(await run_to_end(direct, session, "deltas 270000"))
                return huge

            async def get_huge() -> dict[str, Any]:
                run = await call(direct, "GET", f"runs/{huge['id']}")
                return {"status": f"{len(orjson.dumps(run))} bytes,",
                        "reason": run["status"] + " " + str(run["reason"])}

            # 16 MiB less room for the JSON around it: inside the 16 MiB body limit.
            text_16 = orjson.dumps({"parts": [{"kind": "text",
                                               "text": "t" * (16 * MIB - 64)}]})
            file_10 = orjson.dumps({"parts": [{"kind": "text", "text": "x"}, {
                "kind": "file", "name": "f.bin", "mime": "application/octet-stream",
                "bytes_base64": base64.b64encode(os.urandom(10 * MIB)).decode()}]})
            inputs += [
                ("host_270k_deltas", huge_run),
                ("get_huge_run", get_huge),
                ("run_16mib_text", lambda: run_raw_to_end(direct, session, text_16)),
                ("run_10mib_file", lambda: run_raw_to_end(direct, session, file_10)),
            ]
            only = os.environ.get("HOSTILE_ONLY")  # a comma list of names: those alone
            if only:
                inputs = [item for item in inputs if item[0] in only.split(",")]
            figures = []
            idle_rss = rss_of(stack.daemon.pid)
            for name, work in inputs:
                with RssSampler({"daemon": stack.daemon.pid}) as rss:
                    probe, result = await probed(front, work())
                await asyncio.sleep(RSS_SETTLE - 1.0)  # probed() waited 1 s already
                figure = _figure(name, probe, idle, rss, result)
                back = rss_of(stack.daemon.pid)
                figure.notes.update({"rss_idle_mb": round(idle_rss, 1),
                                     "rss_back_mb": round(back, 1),
                                     "rss_back_met": back - idle_rss <= 50.0})
                log(f"hostile_inputs.{name}: RSS {back:.0f} MB {RSS_SETTLE:.0f} s after "
                    f"(idle {idle_rss:.0f} MB)")
                figures.append(figure)
            with RssSampler({"daemon": stack.daemon.pid}) as rss:
                probe, outcome = await idle_flood(url, headers, quick)
            figures.append(_figure("idle_connections_300", probe, idle, rss, outcome))
    finally:
        owned.close_stack(stack)
    return figures


def _figure(name: str, probe: Probe, idle: Probe, rss: RssSampler, result: Any) -> Figure:
    p99, worst = pct(probe.latencies, 99), max(probe.latencies)
    peak = rss.peak["daemon"] / MB
    outcome = (result if isinstance(result, str)
               else f"{result[0]} {result[1]['detail']['error']}" if isinstance(result, tuple)
               else f"{result['status']} {result.get('reason')}")
    log(f"hostile_inputs.{name}: /health p99 {p99:.1f} ms, max {worst:.1f} ms over "
        f"{len(probe.latencies)} probes ({len(probe.failures)} failed); daemon RSS peak "
        f"{peak:.0f} MB; answered {outcome}")
    return Figure(f"hostile_inputs.{name}", round(p99, 2), "ms", round(pct(idle.latencies, 99), 2),
                  "GET /health p99 with nothing running", Target("value", "<=", 100.0),
                  {"health_max_ms": round(worst, 1), "max_met": worst <= 250.0,
                   "answered_200_met": len(probe.failures) <= 0.01 * len(probe.latencies),
                   "probes": len(probe.latencies), "failed_probes": len(probe.failures),
                   "failures": sorted(set(probe.failures)),
                   "daemon_rss_peak_mb": round(peak, 1), "rss_met": peak <= 300.0,
                   "answered": outcome})
