"""The llamon Playground benchmark (run it through `scripts/bench`).

Every figure is quoted against a baseline measured in the same run, on the same machine,
right next to it (the machines have 2 noisy cores, so absolute numbers drift between runs):

  store_append          Store.append_event events/s  vs  raw sqlite3 executemany (1 txn)
  sse_front_vs_direct   SSE replay of 100k events through the front  vs  the daemon socket
  delta_latency         output.delta arrival through the front  vs  on the daemon socket
  run_create_202        POST /sessions/{id}/runs latency through the front  vs  direct, and vs
                        the same create transaction in process (the floor)
  request_relay         GET / POST /sessions requests/s through the front  vs  direct
  run_path              create -> first output, -> done, first token of 10,000  vs  the same
                        request straight to the same Host by a bare A2A client (the floor)
  first_run             a daemon's first run, the Host started with the daemon  vs  on demand
  host_restart          a new Host generation Ready (API, save+run, watcher)  vs  the Host
                        command spawned directly
  host_restart_warm     save -> Ready and -> first output.delta, generations forked from the
                        warm parent (and cold, warm_start = false), and an outside edit
                        -> the first output.delta of a run sent right after  vs  the same floor
  watch_quiet           saves decided twice (double restarts) by quiet period: sed -i, an
                        editor's writes, save all, format on save
  live_stream           a long run of output.delta through the daemon and front (CPU per
                        delta, rate)  vs  the same Host streaming straight to a client
  daemon_idle_cpu       idle daemon CPU, 10,000 watched files  vs  an idle sleeping Python
  daemon_rss            that daemon's RSS  vs  Python that imported the daemon's code
  up_pss_idle           PSS of every process `up` leaves, idle  vs  bare Pythons, one each
  up_pss_after_runs     the same after 1,000 runs  vs  idle (LLAMON_BENCH_UP_SOAK_RUNS: soak)
  sse_fanout_200        200 SSE clients on one run  vs  1 client's rate x 200
  history_1m            reads of a 1,000,000-event history  vs  the same SQL with sqlite3
  replay_100k           replay of a 100,000-event run  vs  a raw sqlite3 read of its rows
  slow_client           a run with a slow SSE client among 5  vs  without it
  compare_1mb           comparing two 1 MB outputs  vs  difflib on their first 2,000 lines

The processes (daemon, fronts, Hosts, references) are started by this package and torn down
before it exits; only loopback TCP and Unix sockets are used.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import signal
import sys
from pathlib import Path
from types import FrameType

from llamon_playground.common.heap import freeze_startup_heap
from scripts.benchmarks import report
from scripts.benchmarks.figures import Figure
from scripts.benchmarks.meters import Noise
from scripts.benchmarks.owned import Owned
from scripts.benchmarks.plan import all_names, run_all


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="scripts/bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="~1 min version (fewer samples)")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON to FILE")
    names = all_names()
    parser.add_argument("--only", metavar="NAME", action="append", choices=names,
                        help="run only this benchmark (repeatable): " + ", ".join(names))
    parser.add_argument("--strict", action="store_true",
                        help="exit 2 when a target is missed (default: only errors fail)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """0: ran without errors; 1: a section or the teardown failed; 2: --strict, target missed."""
    args = parse_args(argv)
    only = set(args.only or all_names())

    def on_term(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt(f"signal {signum}")  # so that the teardown below still runs
    signal.signal(signal.SIGTERM, on_term)

    started = dt.datetime.now().astimezone()
    head = report.header(args.quick, started)
    print(head, file=sys.stderr, flush=True)
    owned = Owned()
    errors: list[dict[str, str]] = []
    # The measuring client's own full collections would land in the latencies it times.
    freeze_startup_heap()
    # Other people's work on the same cores makes every figure noisier: say how much there was.
    noise = Noise()
    figures: list[Figure] = []
    try:
        figures = asyncio.run(run_all(args.quick, only, owned, errors))
    finally:
        leftovers = owned.close_all()
    noise.finish(owned.child_cpu)
    if leftovers:
        errors.append({"benchmark": "teardown", "error": f"processes still alive: {leftovers}"})
    print(report.render(figures, head + f"  took {noise.duration:.0f} s"))
    print(report.noise_line(noise))
    for e in errors:
        print(f"ERROR {e['benchmark']}: {e['error']}")
    if args.json:
        doc = report.json_doc(args.quick, started, noise, figures, errors)
        Path(args.json).write_text(json.dumps(doc, indent=2) + "\n")
    if errors:
        return 1
    if args.strict and any(f.met is False for f in figures):
        return 2
    return 0
