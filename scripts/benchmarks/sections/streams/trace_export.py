"""trace_export: a live stream with OpenTelemetry export on against the same stream with it
off, in the same run; then with the collector stopped; then a thousand runs with the
collector stopped, watching the daemon's memory.

Three daemons on copies of the example, one Host each; export is switched on by the
project's `[tool.llamon.playground] otlp_endpoint`, which the Host never sees, so only
the daemon's export is measured (an instrumented Host's own spans are the Host's cost). The
collector is a bare OTLP/HTTP receiver in this process that answers 200 to every batch;
"stopped" is a loopback port nothing listens on.

  trace_export.rate            deltas/s delivered, export on  vs  off
  trace_export.cpu_per_delta   daemon CPU per delta, export on  vs  off
  trace_export.rate_down       deltas/s delivered, collector stopped  vs  off
  trace_export.cpu_down        daemon CPU per delta, collector stopped  vs  off
  trace_export.rss_runs_down   daemon RSS after N runs, collector stopped  vs  after N/10,
                               plus the export-off daemon's growth over the same runs
"""

from __future__ import annotations

import asyncio
import socket
import statistics
import time
from typing import Any

import aiohttp
from aiohttp import web

from scripts.benchmarks.clients.client import call, direct_session, start_run
from scripts.benchmarks.clients.raw_http import SseTarget, open_sse
from scripts.benchmarks.figures import Figure, Target, log
from scripts.benchmarks.meters import MB, cpu_of, rss
from scripts.benchmarks.owned import Owned
from scripts.benchmarks.stack import Stack

FULL_DELTAS, QUICK_DELTAS = 20_000, 3_000
FULL_RUNS, QUICK_RUNS = 1_000, 200
STREAM_TIMEOUT_S = 600


class Receiver:
    """A collector that takes everything: 200 to every export, counting the requests."""

    def __init__(self) -> None:
        self.requests = 0
        self.url = ""
        self._runner: web.AppRunner | None = None

    async def start(self) -> None:
        async def take(request: web.Request) -> web.Response:
            await request.read()
            self.requests += 1
            return web.Response(content_type="application/x-protobuf")
        app = web.Application()
        app.router.add_post("/v1/traces", take)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        await web.SockSite(self._runner, sock).start()
        self.url = f"http://127.0.0.1:{sock.getsockname()[1]}"

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()


def unused_port() -> int:
    """A loopback port nothing listens on (a stopped collector): connections are refused."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Daemon:
    def __init__(self, stack: Stack, http: aiohttp.ClientSession, session: str) -> None:
        self.stack, self.http, self.session = stack, http, session
        assert stack.daemon is not None
        self.pid = stack.daemon.pid
        self.target = SseTarget("unix", str(stack.settings.socket_path))


async def start_daemon(owned: Owned, prefix: str, endpoint: str | None) -> Daemon:
    project = owned.project(prefix)
    if endpoint is not None:
        pyproject = project / "pyproject.toml"
        pyproject.write_text(pyproject.read_text()
                             + f'\n[tool.llamon.playground]\notlp_endpoint = "{endpoint}"\n')
    stack = owned.start(project)
    http = direct_session(stack, limit=0)
    try:
        status = await call(http, "POST", "host/start")
        if status["state"] != "ready":
            raise RuntimeError(f"the Host is not Ready: {status}")
        session = await call(http, "POST", "sessions", {"title": prefix}, want=201)
    except BaseException:
        await http.close()
        raise
    owned.note(stack)
    return Daemon(stack, http, session["id"])


async def stream_once(d: Daemon, deltas: int) -> tuple[float, float]:
    """One run of `tokens N`, read on the daemon socket: (deltas/s, daemon CPU us a delta)."""
    c0 = cpu_of(d.pid)
    t0 = time.perf_counter()
    run_id = await start_run(d.http, d.session, f"tokens {deltas}")
    reader = await open_sse(d.target, run_id, timed=True)
    await asyncio.wait_for(reader.closed, STREAM_TIMEOUT_S)
    elapsed = time.perf_counter() - t0
    cpu = cpu_of(d.pid) - c0
    got = sum(1 for _, kind, _, _ in reader.frames.timed_frames() if kind == "output.delta")
    if got != deltas or not reader.frames.ended_terminal:
        raise RuntimeError(f"{got} of {deltas} deltas arrived")
    return got / elapsed, cpu / got * 1e6


async def short_runs(daemons: list[Daemon], runs: int) -> list[list[int]]:
    """`runs` short runs on each daemon, a tenth at a time on each in turn (so both see the
    same noise); each daemon's RSS after each tenth."""
    marks: list[list[int]] = [[] for _ in daemons]
    for _ in range(10):
        for d, kept in zip(daemons, marks, strict=True):
            for _ in range(max(runs // 10, 1)):
                run_id = await start_run(d.http, d.session, "stream a b c")
                reader = await open_sse(d.target, run_id)
                await asyncio.wait_for(reader.closed, 60)
            kept.append(rss(d.pid))
    return marks


async def bench_trace_export(quick: bool, owned: Owned) -> list[Figure]:
    deltas = QUICK_DELTAS if quick else FULL_DELTAS
    runs = QUICK_RUNS if quick else FULL_RUNS
    reps = 2 if quick else 5  # many: three daemons' streams, one after another, on 2 cores
    receiver = Receiver()
    await receiver.start()
    daemons: dict[str, Daemon] = {}
    rates: dict[str, list[float]] = {"off": [], "on": [], "down": []}
    cpus: dict[str, list[float]] = {"off": [], "on": [], "down": []}
    try:
        daemons["off"] = await start_daemon(owned, "lpto", None)
        daemons["on"] = await start_daemon(owned, "lpt1", receiver.url)
        daemons["down"] = await start_daemon(owned, "lptd", f"http://127.0.0.1:{unused_port()}")
        for d in daemons.values():
            await stream_once(d, 100)  # warm-up: imports, connections, the first export
        for rep in range(reps):
            order = ("off", "on", "down") if rep % 2 == 0 else ("down", "on", "off")
            for way in order:
                rate, cpu = await stream_once(daemons[way], deltas)
                rates[way].append(rate)
                cpus[way].append(cpu)
            log(f"trace_export rep {rep + 1}: " + ", ".join(
                f"{w} {rates[w][-1]:,.0f}/s {cpus[w][-1]:.0f} us" for w in rates))
        exported = (await call(daemons["on"].http, "GET", "/health"))["tracing"]
        off_marks, marks = await short_runs([daemons["off"], daemons["down"]], runs)
        down = (await call(daemons["down"].http, "GET", "/health"))["tracing"]
    finally:
        for d in daemons.values():
            await d.http.close()
            owned.close_stack(d.stack)
        await receiver.close()
    med = {w: (statistics.median(rates[w]), statistics.median(cpus[w])) for w in rates}
    notes: dict[str, Any] = {"deltas": deltas, "reps": reps, "collector_requests":
                             receiver.requests, "on_health": exported, "down_health": down,
                             "rss_mib_each_tenth_down": [round(m / MB, 1) for m in marks],
                             "rss_mib_each_tenth_off": [round(m / MB, 1) for m in off_marks]}
    return [
        Figure("trace_export.rate", med["on"][0], "deltas/s", med["off"][0],
               "the same stream with export off", Target("ratio", ">=", 0.97), notes),
        Figure("trace_export.cpu_per_delta", med["on"][1], "us", med["off"][1],
               "daemon CPU a delta with export off", Target("ratio", "<=", 1.10)),
        Figure("trace_export.rate_down", med["down"][0], "deltas/s", med["off"][0],
               "the same stream with export off", Target("ratio", ">=", 0.97)),
        Figure("trace_export.cpu_down", med["down"][1], "us", med["off"][1],
               "daemon CPU a delta with export off", Target("ratio", "<=", 1.10)),
        # What the daemon with export off grew over the same runs is the daemon's own.
        Figure("trace_export.rss_runs_down", marks[-1] / MB, "MiB",
               (marks[0] + off_marks[-1] - off_marks[0]) / MB,
               f"its RSS after the first tenth of {runs} runs, plus what the export-off "
               "daemon grew over the rest", Target("ratio", "<=", 1.05)),
    ]
