"""trace_export: a live stream with OpenTelemetry export on against the same stream with it
off, in the same run; then with the collector stopped; then a thousand runs with the
collector stopped, watching the daemon's memory and CPU.

Daemons on copies of the example, one Host each; export is switched on by the project's
`[tool.llamon.playground] otlp_endpoint`, which the Host never sees, so only the daemon's
export is measured (an instrumented Host's own spans are the Host's cost). The collector is
a bare OTLP/HTTP receiver in this process that answers 200 to every batch; "stopped" is a
loopback port bound and never listened on (connections refused), held for the whole section.

The streams are short and many, in turn on each daemon, their order rotating through every
permutation (no daemon always first after a pause); each figure is the median, over the
repetitions, of the ratio to the export-off stream of the same repetition: the machine's
load moves between repetitions far more than export does (a baseline of its own varies by
±30 % here), and a ratio of neighbours cancels most of that. CPU per delta is the cost
figure; the delivered rate is the one a user sees, and moves with everything else on the
machine.

  trace_export.cpu_per_delta   daemon CPU per delta, export on  /  off  (same repetition)
  trace_export.rate            deltas/s delivered, export on  /  off
  trace_export.cpu_down        daemon CPU per delta, collector stopped  /  off
  trace_export.rate_down       deltas/s delivered, collector stopped  /  off
  trace_export.cpu_runs_on     daemon CPU per short run, export on  /  off, each tenth of
                               the runs in turn (a short run's trace costs what a long
                               one's does: here export's own cost shows)
  trace_export.cpu_runs_down   the same, collector stopped  /  off; `..._grpc` over gRPC
  trace_export.rss_runs_down   daemon RSS after N runs, collector stopped  vs  after N/10,
                               plus the export-off daemon's growth over the same runs
                               (`..._grpc`: over gRPC)
"""

from __future__ import annotations

import asyncio
import itertools
import socket
import statistics
import time
from typing import Any

import aiohttp
from aiohttp import web

from scripts.benchmarks.clients.client import call, direct_session, start_run
from scripts.benchmarks.clients.raw_http import SseTarget, open_sse
from scripts.benchmarks.figures import Figure, Target, log
from scripts.benchmarks.meters import MB, cpu_ns_of, rss
from scripts.benchmarks.owned import Owned
from scripts.benchmarks.stack import Stack

FULL_DELTAS, QUICK_DELTAS = 5_000, 1_500
FULL_REPS, QUICK_REPS = 12, 6  # a multiple of 6: each permutation of the three as often
FULL_RUNS, QUICK_RUNS = 1_000, 200
STREAM_TIMEOUT_S = 600
WAYS = ("off", "on", "down")
SHORT_WAYS = ("off", "on", "down", "grpc")
# What the daemon's log says of export: the exporters' own lines, and ours.
EXPORT_LINES = ("opentelemetry", "trace export")


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


def stopped_collector() -> tuple[socket.socket, str]:
    """A loopback port bound and never listened on (a stopped collector): connections are
    refused, and nothing else can take the port while the socket is held."""
    held = socket.socket()
    held.bind(("127.0.0.1", 0))
    return held, f"http://127.0.0.1:{held.getsockname()[1]}"


class Daemon:
    def __init__(self, stack: Stack, http: aiohttp.ClientSession, session: str) -> None:
        self.stack, self.http, self.session = stack, http, session
        assert stack.daemon is not None
        self.pid = stack.daemon.pid
        self.target = SseTarget("unix", str(stack.settings.socket_path))


async def start_daemon(owned: Owned, prefix: str, endpoint: str | None,
                       extra_env: dict[str, str] | None = None) -> Daemon:
    project = owned.project(prefix)
    if endpoint is not None:
        pyproject = project / "pyproject.toml"
        pyproject.write_text(pyproject.read_text()
                             + f'\n[tool.llamon.playground]\notlp_endpoint = "{endpoint}"\n')
    stack = owned.start(project, extra_env)
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
    c0 = cpu_ns_of(d.pid)
    t0 = time.perf_counter()
    run_id = await start_run(d.http, d.session, f"tokens {deltas}")
    reader = await open_sse(d.target, run_id, timed=True)
    await asyncio.wait_for(reader.closed, STREAM_TIMEOUT_S)
    elapsed = time.perf_counter() - t0
    cpu = cpu_ns_of(d.pid) - c0
    got = sum(1 for _, kind, _, _ in reader.frames.timed_frames() if kind == "output.delta")
    if got != deltas or not reader.frames.ended_terminal:
        raise RuntimeError(f"{got} of {deltas} deltas arrived")
    return got / elapsed, cpu / got * 1e6


async def streams(daemons: dict[str, Daemon], deltas: int, reps: int
                  ) -> dict[str, dict[str, list[float]]]:
    """Each daemon streams once a repetition, in an order rotating through every
    permutation; per way, the rate and CPU a delta of each repetition."""
    got: dict[str, dict[str, list[float]]] = {w: {"rate": [], "cpu": []} for w in WAYS}
    orders = list(itertools.permutations(WAYS))
    for rep in range(reps):
        for way in orders[rep % len(orders)]:
            rate, cpu = await stream_once(daemons[way], deltas)
            got[way]["rate"].append(rate)
            got[way]["cpu"].append(cpu)
        log(f"trace_export rep {rep + 1}: " + ", ".join(
            f"{w} {got[w]['rate'][-1]:,.0f}/s {got[w]['cpu'][-1]:.0f} us" for w in WAYS))
    return got


async def short_runs(daemons: list[Daemon], runs: int) -> tuple[list[list[int]],
                                                                 list[list[float]]]:
    """`runs` short runs on each daemon, a tenth at a time on each in turn (so all see the
    same noise); each daemon's RSS after each tenth, and its CPU seconds a run in it."""
    marks: list[list[int]] = [[] for _ in daemons]
    cpus: list[list[float]] = [[] for _ in daemons]
    tenth = max(runs // 10, 1)
    for _ in range(10):
        for d, kept, cpu in zip(daemons, marks, cpus, strict=True):
            c0 = cpu_ns_of(d.pid)
            for _ in range(tenth):
                run_id = await start_run(d.http, d.session, "stream a b c")
                reader = await open_sse(d.target, run_id)
                await asyncio.wait_for(reader.closed, 60)
            cpu.append((cpu_ns_of(d.pid) - c0) / tenth)
            kept.append(rss(d.pid))
    return marks, cpus


def paired(values: list[float], baselines: list[float]) -> float:
    """The median of the ratios of neighbours (a value to the baseline measured beside it)."""
    return statistics.median(v / b for v, b in zip(values, baselines, strict=True))


def export_lines(d: Daemon) -> list[str]:
    assert d.stack.daemon is not None
    return [ln for ln in d.stack.daemon.output().splitlines()
            if any(word in ln for word in EXPORT_LINES)]


def ratio(name: str, value: float, what: str, target: Target,
          notes: dict[str, Any] | None = None) -> Figure:
    """A figure that is itself a median of paired ratios: its baseline is 1, the neighbour."""
    return Figure(name, value, "x", 1.0, what, target, notes or {})


async def bench_trace_export(quick: bool, owned: Owned) -> list[Figure]:
    deltas = QUICK_DELTAS if quick else FULL_DELTAS
    runs = QUICK_RUNS if quick else FULL_RUNS
    reps = QUICK_REPS if quick else FULL_REPS
    receiver = Receiver()
    await receiver.start()
    held, stopped = stopped_collector()
    held_grpc, stopped_grpc = stopped_collector()
    daemons: dict[str, Daemon] = {}
    try:
        daemons["off"] = await start_daemon(owned, "lpto", None)
        daemons["on"] = await start_daemon(owned, "lpt1", receiver.url)
        daemons["down"] = await start_daemon(owned, "lptd", stopped)
        for d in daemons.values():
            await stream_once(d, 100)  # warm-up: imports, connections, the first export
        got = await streams(daemons, deltas, reps)
        exported = (await call(daemons["on"].http, "GET", "/health"))["tracing"]
        # The gRPC exporter's own way of failing (a channel, its reconnect backoff), over
        # the same short runs.
        daemons["grpc"] = await start_daemon(owned, "lptg", stopped_grpc,
                                             {"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"})
        # The same history as the others before its memory is watched: a daemon's RSS
        # grows with its first few thousand events whatever it exports (SQLite's page
        # cache, the first buffers), which a fresh daemon beside three seasoned ones
        # counted as export's growth.
        for _ in range(reps + 1):
            await stream_once(daemons["grpc"], deltas)
        short = [daemons[w] for w in SHORT_WAYS]
        marks, run_cpus = await short_runs(short, runs)
        down = (await call(daemons["down"].http, "GET", "/health"))["tracing"]
        down_grpc = (await call(daemons["grpc"].http, "GET", "/health"))["tracing"]
        lines = {w: len(export_lines(daemons[w])) for w in ("down", "grpc")}
    finally:
        for d in daemons.values():
            await d.http.close()
            owned.close_stack(d.stack)
        await receiver.close()
        held.close()
        held_grpc.close()
    off = got["off"]
    med = {w: {k: round(statistics.median(v), 1) for k, v in got[w].items()} for w in WAYS}
    notes: dict[str, Any] = {
        "deltas": deltas, "reps": reps, "medians": med,
        "each_rep": {w: {k: [round(x, 1) for x in v] for k, v in got[w].items()}
                     for w in WAYS},
        "collector_requests": receiver.requests, "on_health": exported,
        "down_health": down, "down_grpc_health": down_grpc,
        "export_log_lines_down": lines,
        "cpu_ms_a_run_each_tenth": {w: [round(c * 1e3, 2) for c in cs]
                                    for w, cs in zip(SHORT_WAYS, run_cpus, strict=True)},
        "rss_mib_each_tenth": {w: [round(m / MB, 1) for m in ms]
                               for w, ms in zip(SHORT_WAYS, marks, strict=True)},
        "cpu_runs_down_vs_on": round(paired(run_cpus[2], run_cpus[1]), 3)}
    same_rep = "export off, the same repetition (median of the paired ratios)"
    off_marks, _, down_marks, grpc_marks = marks
    off_cpu, on_cpu, down_cpu, grpc_cpu = run_cpus
    same_tenth = "export off, the same tenth of the runs (median of the paired ratios)"
    return [
        ratio("trace_export.cpu_per_delta", paired(got["on"]["cpu"], off["cpu"]), same_rep,
              Target("ratio", "<=", 1.10), notes),
        ratio("trace_export.rate", paired(got["on"]["rate"], off["rate"]), same_rep,
              Target("ratio", ">=", 0.97)),
        ratio("trace_export.cpu_down", paired(got["down"]["cpu"], off["cpu"]), same_rep,
              Target("ratio", "<=", 1.10)),
        ratio("trace_export.rate_down", paired(got["down"]["rate"], off["rate"]), same_rep,
              Target("ratio", ">=", 0.97)),
        ratio("trace_export.cpu_runs_on", paired(on_cpu, off_cpu), same_tenth,
              Target("ratio", "<=", 1.10)),
        ratio("trace_export.cpu_runs_down", paired(down_cpu, off_cpu), same_tenth,
              Target("ratio", "<=", 1.10)),
        ratio("trace_export.cpu_runs_down_grpc", paired(grpc_cpu, off_cpu), same_tenth,
              Target("ratio", "<=", 1.10)),
        # What the daemon with export off grew over the same runs is the daemon's own.
        Figure("trace_export.rss_runs_down", down_marks[-1] / MB, "MiB",
               (down_marks[0] + off_marks[-1] - off_marks[0]) / MB,
               f"its RSS after the first tenth of {runs} runs, plus what the export-off "
               "daemon grew over the rest", Target("ratio", "<=", 1.05)),
        Figure("trace_export.rss_runs_down_grpc", grpc_marks[-1] / MB, "MiB",
               (grpc_marks[0] + off_marks[-1] - off_marks[0]) / MB,
               f"its RSS after the first tenth of {runs} runs, plus what the export-off "
               "daemon grew over the rest", Target("ratio", "<=", 1.05)),
    ]
