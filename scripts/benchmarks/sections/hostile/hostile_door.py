"""The front's door under local floods (docs/security.md, "Connections"): the token holder's
GET /health, each probe on a connection of its own (20 a second: each needs a slot), while

  hostile_inputs.reconnect_flood_300            300 sockets of our uid sending the first
                                                bytes of a head, then closed and opened
                                                again as fast as one process can
                                                (scripts/benchmarks/children/reconnect_flood.py)
  hostile_inputs.reconnect_flood_300_other_uid  the same flood under another uid (needs
                                                root and setpriv; skipped otherwise)
  hostile_inputs.sse_streams_1000               the token holder opening 1,000 SSE streams
                                                (GET /events): those past the front's stream
                                                cap are answered 429 too_many_streams

Each: /health p99 (the figure) and max, the share of probes answered 200, the daemon's peak
RSS. Targets: p99 <= 100 ms, max <= 250 ms, >= 99 % answered 200, RSS <= 300 MB. Baseline:
the same probe's p99 with nothing running. Lives beside hostile_inputs.py (one section's
cases, in a module of their own).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import sys
import time
from collections.abc import Awaitable
from pathlib import Path
from typing import Any

import aiohttp

from scripts.benchmarks.clients.client import P, start_checked_front
from scripts.benchmarks.figures import Figure, Target, log, pct
from scripts.benchmarks.meters import MB, RssSampler
from scripts.benchmarks.owned import Owned
from scripts.benchmarks.sections.hostile.hostile_inputs import IDLE_PROBES, PROBE_RATE, Probe
from scripts.benchmarks.stack import REPO


class TimedProbe(Probe):
    """A Probe that also keeps when each probe started (to split a case into phases)."""

    def __init__(self, http: aiohttp.ClientSession) -> None:
        super().__init__(http)
        self.starts: list[float] = []

    async def one(self) -> None:
        started = time.perf_counter()
        await super().one()
        self.starts.append(started)  # in the order latencies were appended


async def probed(http: aiohttp.ClientSession, work: Awaitable[Any]) -> tuple[TimedProbe, Any]:
    """`work`, with the token holder's probe running beside it (as hostile_inputs.probed)."""
    probe = TimedProbe(http)
    stop = asyncio.Event()
    task = asyncio.create_task(probe.run(stop))
    try:
        result = await work
        await asyncio.sleep(1.0)
    finally:
        stop.set()
        await task
    return probe, result

CHILDREN = REPO / "scripts" / "benchmarks" / "children"
FLOOD_SCRIPT = CHILDREN / "reconnect_flood.py"
OPENER_SCRIPT = CHILDREN / "stream_opener.py"
FLOOD = 300
STREAMS = 1000
NOBODY = 65534


def fresh(url: str, headers: dict[str, str]) -> aiohttp.ClientSession:
    """A client that opens a connection of its own for every request."""
    return aiohttp.ClientSession(base_url=url, headers=headers,
                                 connector=aiohttp.TCPConnector(force_close=True))


async def reconnect_flood(url: str, headers: dict[str, str], quick: bool,
                          uid: int | None) -> tuple[Probe, str]:
    """The probe while FLOOD sockets (of `uid`, else ours) send partial heads and reconnect."""
    port = url.rsplit(":", 1)[1].rstrip("/")
    if uid is None:
        command = [sys.executable, str(FLOOD_SCRIPT), port, str(FLOOD)]
    else:  # the system Python, the text passed with -c: the other uid may not read the venv
        command = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups",
                   "/usr/bin/python3", "-c", FLOOD_SCRIPT.read_text(), port, str(FLOOD)]
    flood = await asyncio.create_subprocess_exec(
        *command, cwd="/", stdout=asyncio.subprocess.PIPE, start_new_session=True)
    try:
        await asyncio.sleep(1.0)  # the flood at full speed before the first probe
        async with fresh(url, headers) as http:
            probe, _ = await probed(http, asyncio.sleep(6.0 if quick else 20.0))
    finally:
        if flood.returncode is None:
            os.kill(flood.pid, signal.SIGTERM)
        out, _ = await flood.communicate()
    opened, failed = (out.decode().split() + ["?"] * 2)[:2]
    return probe, f"{opened} flood connections opened, {failed} not accepted"


async def many_streams(url: str, headers: dict[str, str], quick: bool) -> tuple[Probe, str]:
    """The probe, and a REST call beside it, while the token holder holds STREAMS streams
    open (as many as the front lets it: the others are answered 429), opened by a process of
    their own (scripts/benchmarks/children/stream_opener.py), as a browser's tabs would be."""
    port = url.rsplit(":", 1)[1].rstrip("/")
    token = headers["Authorization"].removeprefix("Bearer ")
    opened_at = [0.0]

    async def work() -> str:
        opener = await asyncio.create_subprocess_exec(
            sys.executable, str(OPENER_SCRIPT), port, f"{P}/events", str(STREAMS),
            cwd="/", stdout=asyncio.subprocess.PIPE, start_new_session=True,
            env={**os.environ, "STREAM_TOKEN": token})
        try:
            assert opener.stdout is not None
            summary = (await opener.stdout.readline()).decode().split()
            opened_at[0] = time.perf_counter()
            async with fresh(url, headers) as rest, rest.get(f"{P}/sessions") as resp:
                await resp.read()
                listed = resp.status
            await asyncio.sleep(3.0 if quick else 10.0)  # the streams held open
        finally:
            if opener.returncode is None:
                os.kill(opener.pid, signal.SIGTERM)
            await opener.wait()
        seconds, counts = (summary or ["?"])[0], ", ".join(summary[1:])
        return (f"streams opened in {seconds} s: {counts}; GET /sessions beside them: {listed}")

    async with fresh(url, headers) as probe_http:
        probe, outcome = await probed(probe_http, work())
    held = [lat for start, lat in zip(probe.starts, probe.latencies, strict=True)
            if start >= opened_at[0]]
    if held:
        outcome += (f"; while the streams were held (after the opening burst): /health p99 "
                    f"{pct(held, 99):.1f} ms, max {max(held):.1f} ms over {len(held)} probes")
    return probe, outcome


async def bench_hostile_door(quick: bool, owned: Owned) -> list[Figure]:
    """The three door cases above, on one daemon and front."""
    stack = owned.start(owned.project("lphd"))
    try:
        assert stack.daemon is not None
        _, url, headers = await start_checked_front(stack)
        async with fresh(url, headers) as http:
            idle = Probe(http)
            for _ in range(IDLE_PROBES):
                await idle.one()
                await asyncio.sleep(1 / PROBE_RATE)
        cases = [("reconnect_flood_300", lambda: reconnect_flood(url, headers, quick, None))]
        if (os.getuid() == 0 and shutil.which("setpriv")
                and Path("/usr/bin/python3").exists()):  # noqa: ASYNC240 (between the measurements)
            cases.append(("reconnect_flood_300_other_uid",
                          lambda: reconnect_flood(url, headers, quick, NOBODY)))
        else:
            log("hostile_inputs.reconnect_flood_300_other_uid: skipped (needs root and setpriv)")
        cases.append(("sse_streams_1000", lambda: many_streams(url, headers, quick)))
        only = os.environ.get("HOSTILE_ONLY")  # a comma list of names: those alone
        if only:
            cases = [case for case in cases if case[0] in only.split(",")]
        figures = []
        for name, case in cases:
            with RssSampler({"daemon": stack.daemon.pid}) as rss:
                probe, outcome = await case()
            figures.append(door_figure(name, probe, idle, rss, outcome))
    finally:
        owned.close_stack(stack)
    return figures


def door_figure(name: str, probe: Probe, idle: Probe, rss: RssSampler, outcome: str) -> Figure:
    p99, worst = pct(probe.latencies, 99), max(probe.latencies)
    peak = rss.peak["daemon"] / MB
    answered = 100.0 * (len(probe.latencies) - len(probe.failures)) / len(probe.latencies)
    log(f"hostile_inputs.{name}: /health p99 {p99:.1f} ms, max {worst:.1f} ms, "
        f"{answered:.1f} % of {len(probe.latencies)} probes answered 200 "
        f"({sorted(set(probe.failures))}); daemon RSS peak {peak:.0f} MB; {outcome}")
    return Figure(f"hostile_inputs.{name}", round(p99, 2), "ms", round(pct(idle.latencies, 99), 2),
                  "GET /health p99 with nothing running", Target("value", "<=", 100.0),
                  {"health_max_ms": round(worst, 1), "max_met": worst <= 250.0,
                   "probes": len(probe.latencies), "failed_probes": len(probe.failures),
                   "answered_200_pct": round(answered, 2), "answered_met": answered >= 99.0,
                   "failures": sorted(set(probe.failures)),
                   "daemon_rss_peak_mb": round(peak, 1), "rss_met": peak <= 300.0,
                   "answered": outcome})
