"""Which sections exist, in which order they run, and how each is guarded.

A section that fails is reported in `errors` and the run goes on with the next one.
"""

from __future__ import annotations

import asyncio
import time
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from scripts.benchmarks.configs import CoreConfig
from scripts.benchmarks.figures import Figure, log
from scripts.benchmarks.owned import Owned
from scripts.benchmarks.sections import page, suite
from scripts.benchmarks.sections.history import (
    compare,
    history_year,
    import_health,
    load_history,
    search,
)
from scripts.benchmarks.sections.host import (
    host_idle,
    host_restart,
    host_restart_warm,
    up_memory,
    watch_quiet,
)
from scripts.benchmarks.sections.hostile import hostile_door, hostile_inputs
from scripts.benchmarks.sections.streams import (
    core,
    core_live,
    live_stream,
    load_fanout,
    load_slow,
    run_path,
    trace_export,
)

SECTION_TIMEOUT_S = 300  # each section after the live trio, at most


@dataclass(frozen=True)
class Section:
    name: str  # as logged and reported in errors
    run: Callable[[bool, Owned], Awaitable[list[Figure]]]  # (quick, owned) -> figures
    picks: tuple[str, ...]  # the --only names that select it
    timeout_s: float | None = SECTION_TIMEOUT_S


BEFORE_LIVE = (
    Section("store_append", core.bench_store_append, ("store_append",), None),
    Section("sse_front_vs_direct", core.bench_sse, ("sse_front_vs_direct",), None),
)
# These three share one live stack (core_live.Live), started once when any is picked.
LIVE: tuple[tuple[str, Callable[[CoreConfig, core_live.Live], Awaitable[list[Figure]]]], ...] = (
    ("delta_latency", core_live.bench_delta_latency),
    ("run_create_202", core_live.bench_run_create),
    ("request_relay", core_live.bench_request_relay),
)
AFTER_LIVE = (
    Section("run_path", run_path.bench_run_path, ("run_path",)),
    Section("first_run", run_path.bench_first_run, ("first_run",)),
    Section("host_restart", host_restart.bench_host_restart, ("host_restart",)),
    Section("host_restart_warm", host_restart_warm.bench_host_restart_warm,
            ("host_restart_warm",)),
    Section("watch_quiet", watch_quiet.bench_watch_quiet, ("watch_quiet",)),
    Section("live_stream", live_stream.bench_live_stream, ("live_stream",), 900),
    Section("daemon_idle", host_idle.bench_daemon_idle, ("daemon_idle_cpu", "daemon_rss")),
    # A soak (LLAMON_BENCH_UP_SOAK_RUNS=10000) runs for many minutes.
    Section("up_memory", up_memory.bench_up_memory,
            ("up_pss_idle", "up_pss_after_runs", "up_pss_soak"), 7200),
    Section("sse_fanout_200", load_fanout.bench_sse_fanout, ("sse_fanout_200",)),
    Section("history_1m", load_history.bench_history, ("history_1m",)),
    Section("replay_100k", load_history.bench_replay, ("replay_100k",)),
    Section("slow_client", load_slow.bench_slow_client, ("slow_client",)),
    Section("compare_1mb", compare.bench_compare, ("compare_1mb",)),
    Section("import_health", import_health.bench_import_health,
            ("import_health", "export_health")),
    Section("page", page.bench_page, ("page",)),
    Section("hostile_inputs", hostile_inputs.bench_hostile_inputs, ("hostile_inputs",), 600),
    # hostile_inputs' door cases (floods at the front), a section of their own beside it.
    Section("hostile_door", hostile_door.bench_hostile_door, ("hostile_inputs", "hostile_door")),
    Section("search_100k", search.bench_search, ("search_100k",)),
    Section("suite", suite.bench_suite, ("suite",), 900),
    Section("trace_export", trace_export.bench_trace_export, ("trace_export",), 1200),
    # Its first run builds the year's history (minutes; cached afterwards).
    Section("history_year", history_year.bench_history_year, ("history_year",), 2400),
)


def all_names() -> tuple[str, ...]:
    """Every --only name, once each, in running order (a name may pick several sections)."""
    return tuple(dict.fromkeys(
        [n for s in BEFORE_LIVE for n in s.picks] + [name for name, _ in LIVE]
        + [n for s in AFTER_LIVE for n in s.picks]))


async def run_all(quick: bool, only: set[str], owned: Owned,
                  errors: list[dict[str, str]]) -> list[Figure]:
    """Run every picked section in order; the figures of those that succeeded."""
    figures: list[Figure] = []

    async def guarded(name: str, picks: tuple[str, ...],
                      fn: Callable[[], Awaitable[list[Figure]]]) -> None:
        if not only & set(picks):
            return
        log(f"{name} ...")
        t0 = time.perf_counter()
        try:
            figures.extend(await fn())
        except Exception as exc:  # noqa: BLE001 (one section's failure is reported; the rest run)
            traceback.print_exc()
            errors.append({"benchmark": name, "error": f"{type(exc).__name__}: {exc}"})
        log(f"{name} done in {time.perf_counter() - t0:.1f} s")

    def bounded(section: Section) -> Callable[[], Awaitable[list[Figure]]]:
        def start() -> Awaitable[list[Figure]]:
            work = section.run(quick, owned)
            return work if section.timeout_s is None else asyncio.wait_for(work,
                                                                           section.timeout_s)
        return start

    for section in BEFORE_LIVE:
        await guarded(section.name, section.picks, bounded(section))
    if only & {name for name, _ in LIVE}:
        cfg = CoreConfig.make(quick)
        live = core_live.Live(cfg, owned)
        try:
            try:
                await live.start()
            except Exception as exc:  # noqa: BLE001 (reported with the figures)
                traceback.print_exc()
                errors.append({"benchmark": "live stack", "error": f"{type(exc).__name__}: {exc}"})
            else:
                for name, bench in LIVE:
                    await guarded(name, (name,),
                                  lambda bench=bench: bench(cfg, live))  # type: ignore[misc]
        finally:
            await live.close()
    for section in AFTER_LIVE:
        await guarded(section.name, section.picks, bounded(section))
    return figures
