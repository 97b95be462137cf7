"""The Playground beside Google ADK's dev server, measured the same way (`scripts/compare-adk`).

Three systems, one client (aiohttp, one kept-alive session for all):
  Playground     daemon + front + the bundled example's Host (`tokens N`), prewarmed, runs
                 POSTed through the front and their event streams read
  ADK in memory  `adk api_server --session_service_uri memory://` on a model-free agent that
                 streams the same N tokens; one session, runs POSTed to `/run_sse` (streaming)
  ADK SQLite     the same with `sqlite:///...` sessions: the durable mode, as the Playground is

Each repetition starts the three afresh (their order rotated), takes each one's idle PSS and
its first run right after its start, then interleaves the systems run by run (the order
rotated every round): warm-up runs, one-token runs, `tokens 10000` runs (the Playground's
cancelled with `DELETE /runs/{id}` once its first token is read: the rest measures nothing
asked here and took ~15 s on a busy machine; ADK's read to the end), and, in the last
repetition of a full run, runs up to 1,000 since its start (the three side by side, ten
runs a session) and the PSS after them. A repetition gives each system's percentiles; a figure is the median of the
repetitions'. Then saves: the three started once more (ADK with `--reload_agents`), each
saved and run in turn, to the saved code's first output; that figure is the saves' median.
Everything started is torn down (process groups) before it exits; loopback only.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import importlib.metadata
import os
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

import aiohttp
import orjson

from scripts.benchmarks.compare.systems import Adk, Playground, Sample
from scripts.benchmarks.compare.table import Row, median_of, render
from scripts.benchmarks.figures import log, pct
from scripts.benchmarks.meters import MB, Noise, nproc
from scripts.benchmarks.owned import Owned
from scripts.benchmarks.stack import REPO

LONG_TOKENS = 10_000
# The runs before the second PSS go ten to a session, as a developer's do (the year's history
# of scripts/bench has mostly ten-run sessions). In one session, ADK's runs slow down as it
# grows: each run loads the whole session (every event), and in memory copies it.
SESSION_RUNS = 10
KEYS = ("playground", "adk_memory", "adk_sqlite")


@dataclass(frozen=True)
class Config:
    """How much each repetition does."""

    reps: int
    samples: int  # one-token runs per system
    long_samples: int  # `tokens 10000` runs per system
    warmup: int  # one-token runs per system before the samples
    memory_runs: int  # runs since the start before the second PSS (0: not measured)
    saves: int  # saves per system after the repetitions, on servers of their own (0: none)


FULL = Config(reps=3, samples=30, long_samples=2, warmup=3, memory_runs=1000, saves=5)
QUICK = Config(reps=3, samples=10, long_samples=1, warmup=2, memory_runs=0, saves=3)


class System(Protocol):
    """What the comparison asks of each system (systems.py)."""

    label: str

    async def start(self, http: aiohttp.ClientSession) -> float: ...

    async def run(self, http: aiohttp.ClientSession, tokens: int, cut: bool = False
                  ) -> Sample: ...

    async def save_run(self, http: aiohttp.ClientSession, n: int) -> float: ...

    async def new_session(self, http: aiohttp.ClientSession) -> None: ...

    def pss(self) -> int: ...

    def close(self) -> None: ...


def rotated(keys: Sequence[str], by: int) -> list[str]:
    """The keys starting at `by` (mod their count): who goes first changes each round."""
    n = by % len(keys)
    return [*keys[n:], *keys[:n]]


async def repetition(rep: int, cfg: Config, owned: Owned, http: aiohttp.ClientSession,
                     adk_bin: str, last: bool) -> dict[str, dict[str, float]]:
    """One repetition; each system's figures (ms, MB) by name."""
    systems: dict[str, System] = {"playground": Playground(owned),
                                  "adk_memory": Adk(owned, adk_bin, "memory"),
                                  "adk_sqlite": Adk(owned, adk_bin, "sqlite")}
    order = rotated(KEYS, rep)
    out: dict[str, dict[str, float]] = {k: {} for k in KEYS}
    one: dict[str, list[Sample]] = {k: [] for k in KEYS}
    long: dict[str, list[Sample]] = {k: [] for k in KEYS}
    try:
        for key in order:
            system = systems[key]
            out[key]["start"] = await system.start(http)
            out[key]["pss_idle"] = system.pss() / MB
            out[key]["first_run"] = (await system.run(http, 1)).done
        for i in range(cfg.warmup):
            for key in rotated(order, i):
                await systems[key].run(http, 1)
        for i in range(cfg.samples):
            for key in rotated(order, i):
                one[key].append(await systems[key].run(http, 1))
        for i in range(cfg.long_samples):
            for key in rotated(order, i):
                long[key].append(await systems[key].run(http, LONG_TOKENS, cut=True))
        if last and cfg.memory_runs:
            # Only the memory is measured after these: the three run side by side, each its
            # runs one after another, so the 1,000 take a third of the time.
            more = max(0, cfg.memory_runs - (1 + cfg.warmup + cfg.samples + cfg.long_samples))
            async with asyncio.TaskGroup() as group:
                for key in KEYS:
                    group.create_task(runs(systems[key], http, more, SESSION_RUNS))
            for key in KEYS:
                out[key]["pss_after_runs"] = systems[key].pss() / MB
    finally:
        for system in systems.values():
            try:
                system.close()
            except Exception as exc:  # noqa: BLE001 (close the others all the same)
                log(f"closing {system.label}: {exc}")
    for key in KEYS:
        created = [s.created for s in one[key]]
        first = [s.first for s in one[key]]
        done = [s.done for s in one[key]]
        out[key].update({
            "created_p50": pct(created, 50), "first_p50": pct(first, 50),
            "first_p99": pct(first, 99), "done_p50": pct(done, 50),
            "done_p99": pct(done, 99),
            "long_first_p50": pct([s.first for s in long[key]], 50)})
    log(f"repetition {rep + 1}: " + "; ".join(
        f"{systems[k].label} first {out[k]['first_p50']:.1f} done {out[k]['done_p50']:.1f} "
        f"long first {out[k]['long_first_p50']:.1f} ms" for k in KEYS))
    return out


async def saves(cfg: Config, owned: Owned, http: aiohttp.ClientSession, adk_bin: str
                ) -> dict[str, dict[str, float]]:
    """Each system's median ms from a save to the saved code's first output, on systems of
    their own (ADK with `--reload_agents`; the Playground as it always runs), after two
    warm-up saves each (the Playground's warm parent then holds what its Host imports)."""
    systems: dict[str, System] = {"playground": Playground(owned),
                                  "adk_memory": Adk(owned, adk_bin, "memory", reload=True),
                                  "adk_sqlite": Adk(owned, adk_bin, "sqlite", reload=True)}
    ms: dict[str, list[float]] = {k: [] for k in KEYS}
    try:
        for key in KEYS:
            await systems[key].start(http)
            await runs(systems[key], http, cfg.warmup)
        for n in (-1, -2):
            for key in KEYS:
                await systems[key].save_run(http, n)
        for i in range(cfg.saves):
            for key in rotated(KEYS, i):
                ms[key].append(await systems[key].save_run(http, i))
    finally:
        for system in systems.values():
            try:
                system.close()
            except Exception as exc:  # noqa: BLE001 (close the others all the same)
                log(f"closing {system.label}: {exc}")
    log("saves: " + "; ".join(f"{systems[k].label} {[round(x) for x in ms[k]]} ms"
                              for k in KEYS))
    return {k: {"save": pct(ms[k], 50)} for k in KEYS}


async def runs(system: System, http: aiohttp.ClientSession, count: int,
               per_session: int = 0) -> None:
    """`count` one-token runs, one after another; a new session every `per_session` runs."""
    for n in range(count):
        if per_session and n % per_session == 0:
            await system.new_session(http)
        await system.run(http, 1)


# (figure, its key in a repetition's figures, unit, whether the targets hold for it)
FIGURES = [
    ("run create → 202 (ADK: → response headers) p50", "created_p50", "ms", False),
    ("create → first output p50 (a one-token answer)", "first_p50", "ms", True),
    ("create → first output p99", "first_p99", "ms", False),
    ("create → done p50", "done_p50", "ms", True),
    ("create → done p99", "done_p99", "ms", False),
    ("first token of a 10,000-token answer p50", "long_first_p50", "ms", True),
    ("the first run after start, create → done", "first_run", "ms", False),
    ("start → ready (spawn to the first answer)", "start", "ms", False),
    ("PSS of all processes, idle after start", "pss_idle", "MB", False),
    ("PSS of all processes after 1,000 runs", "pss_after_runs", "MB", False),
    ("a save → the saved code's first output (median of the saves)", "save", "ms", False),
]


def rows_of(reps: list[dict[str, dict[str, float]]]) -> list[Row]:
    """Each figure's median over the repetitions, per system (a figure no repetition
    measured is left out)."""
    rows = []
    for name, key, unit, targeted in FIGURES:
        values = {k: [r[k][key] for r in reps if key in r[k]] for k in KEYS}
        if not any(values.values()):
            continue
        rows.append(Row(name, unit, median_of(values["playground"]),
                        median_of(values["adk_memory"]), median_of(values["adk_sqlite"]),
                        targeted, {"repetitions": values}))
    return rows


def adk_version(adk_bin: str) -> str:
    """google-adk's version in the venv `adk_bin` belongs to."""
    venv = Path(adk_bin).resolve().parents[1]
    for site in venv.glob("lib/python*/site-packages"):
        for dist in importlib.metadata.distributions(path=[str(site)]):
            if dist.metadata["Name"] == "google-adk":
                return str(dist.version)
    return "unknown"


async def compare(cfg: Config, adk_bin: str) -> dict[str, Any]:
    """Run every repetition; the rows and what the JSON says about the run."""
    owned = Owned()
    noise = Noise()
    reps: list[dict[str, dict[str, float]]] = []
    saved: dict[str, dict[str, float]] = {}
    started = datetime.datetime.now(datetime.UTC)
    try:
        async with aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=0, force_close=False)) as http:
            for rep in range(cfg.reps):
                reps.append(await repetition(rep, cfg, owned, http, adk_bin,
                                             last=rep == cfg.reps - 1))
            if cfg.saves:
                saved = await saves(cfg, owned, http, adk_bin)
    finally:
        alive = owned.close_all()
        if alive:
            log(f"processes of ours still alive after teardown: {alive}")
    noise.finish(owned.child_cpu)
    rows = rows_of([*reps, saved] if saved else reps)
    return {"rows": rows, "json": {
        "date": started.strftime("%Y-%m-%d %H:%M UTC"), "adk_version": adk_version(adk_bin),
        "config": asdict(cfg), "long_tokens": LONG_TOKENS,
        "machine": {"cpus": nproc(), "loadavg_before": noise.loadavg_before,
                    "loadavg_after": noise.loadavg_after,
                    "other_work_cores": round(noise.foreign_cores, 2),
                    "seconds": round(noise.duration, 1)},
        "figures": [row.as_json() for row in rows], "repetitions": reps, "saves": saved}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/compare-adk", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help="fewer runs per repetition, no PSS after 1,000 runs (2-3.5 min)")
    parser.add_argument("--json", metavar="FILE", help="also write the figures to FILE")
    parser.add_argument("--reps", type=int, help="repetitions (default 3)")
    parser.add_argument("--memory-runs", type=int,
                        help="runs before the second PSS, 0 to skip (default 1000, quick 0)")
    parser.add_argument("--saves", type=int,
                        help="saves per system after the repetitions, 0 to skip "
                             "(default 5, quick 3)")
    parser.add_argument("--adk", default=str(REPO / ".venv-adk" / "bin" / "adk"),
                        help="the `adk` command to run (default: .venv-adk/bin/adk)")
    args = parser.parse_args(argv)
    cfg = QUICK if args.quick else FULL
    cfg = Config(args.reps or cfg.reps, cfg.samples, cfg.long_samples, cfg.warmup,
                 cfg.memory_runs if args.memory_runs is None else args.memory_runs,
                 cfg.saves if args.saves is None else args.saves)
    if not os.access(args.adk, os.X_OK):
        print(f"compare-adk: no `adk` at {args.adk} (scripts/compare-adk installs it)",
              file=sys.stderr)
        return 2
    result = asyncio.run(compare(cfg, os.path.abspath(args.adk)))
    info = result["json"]
    machine = info["machine"]
    print(render(result["rows"]))
    print(f"{info['date']}; google-adk {info['adk_version']}; {cfg.reps} repetitions of "
          f"{cfg.samples} one-token and {cfg.long_samples} {LONG_TOKENS:,}-token runs per "
          f"system; {machine['seconds']:.0f} s; other work on the machine "
          f"{machine['other_work_cores']:.2f} of {machine['cpus']} cores (load "
          f"{machine['loadavg_before']:.1f} → {machine['loadavg_after']:.1f})")
    if args.json:
        Path(args.json).write_bytes(orjson.dumps(info, option=orjson.OPT_INDENT_2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
