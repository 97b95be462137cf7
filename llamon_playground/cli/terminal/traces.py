"""`export-traces`: stored runs sent to an OpenTelemetry collector (docs/tracing.md), and
the one-line notice `up` gives when an endpoint is set but OpenTelemetry is not installed.

Runs in this process, reading the project's history read-only: it needs no daemon, so a
bundle someone handed you can be imported and its runs looked at in the team's tracing
backend. The same switches as the daemon's (`OTEL_EXPORTER_OTLP_ENDPOINT`, ...).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import Any

from llamon_playground.common.config import Settings
from llamon_playground.daemon.errors import ProjectError
from llamon_playground.daemon.introspect.project_config import load_project_config
from llamon_playground.daemon.tracing.settings import (
    INSTALL_HINT,
    TraceSettings,
    missing_modules,
    trace_settings,
)

EXIT_OK, EXIT_ERROR, EXIT_USAGE = 0, 1, 2
FLUSH_S = 30.0


def project_trace_settings(settings: Settings) -> TraceSettings:
    """The trace switches the daemon of this project would read."""
    try:
        raw = load_project_config(settings.project_dir).raw.get("playground")
    except ProjectError:
        raw = None
    endpoint = raw.get("otlp_endpoint") if isinstance(raw, dict) else None
    return trace_settings(os.environ, endpoint)


def missing_extra_notice(settings: Settings) -> str | None:
    """What `up` says once when an endpoint is set and OpenTelemetry is not installed."""
    traces = project_trace_settings(settings)
    if traces.enabled and missing_modules(traces):
        return (f"an OTLP endpoint is set ({traces.endpoint}) but OpenTelemetry is not "
                f"installed: runs will not be exported as traces; {INSTALL_HINT}")
    return None


def export_traces(args: argparse.Namespace, settings: Settings) -> int:
    # Here, not at the top: `up` imports this module for its notice and serves for days;
    # reading history (the store, aiosqlite, the A2A client) is this command's alone.
    from llamon_playground.daemon.tracing.agent import project_agent_name
    from llamon_playground.daemon.tracing.backfill import BadSince, backfill, since_stamp
    traces = project_trace_settings(settings)
    if not traces.enabled:
        print("llamon-playground: no OTLP endpoint: set OTEL_EXPORTER_OTLP_ENDPOINT (or "
              "[tool.llamon.playground] otlp_endpoint)", file=sys.stderr)
        return EXIT_USAGE
    if missing_modules(traces):
        print(f"llamon-playground: OpenTelemetry is not installed: {INSTALL_HINT}",
              file=sys.stderr)
        return EXIT_ERROR
    try:
        since = since_stamp(args.since) if args.since else None
    except BadSince as exc:
        print(f"llamon-playground: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if not settings.db_path.exists():
        print("llamon-playground: this project has no history yet", file=sys.stderr)
        return EXIT_OK
    from llamon_playground.daemon.tracing.sdk import SpanSink
    sink = SpanSink(traces)
    try:
        done = backfill(settings.db_path, sink, project_agent_name(settings.project_dir),
                        session=args.session, since=since,
                        capture_content=traces.capture_content)
        sink.flush(FLUSH_S)
    finally:
        sink.shutdown()
    counts = sink.counts
    print(f"exported {done.runs} runs and {done.suite_runs} suite runs ({counts.exported} "
          f"spans) to {traces.endpoint}", file=sys.stderr)
    lost = counts.failed + counts.pending + counts.dropped
    if lost:
        print(f"llamon-playground: {lost} spans were not taken by the collector",
              file=sys.stderr)
        return EXIT_ERROR
    return EXIT_OK


def add_trace_commands(sub: Any, settings_of: Callable[[str | None], Settings]) -> None:
    """Add `export-traces` to the CLI's subcommands."""
    p = sub.add_parser("export-traces", help="send stored runs to an OpenTelemetry collector "
                                             "(OTEL_EXPORTER_OTLP_ENDPOINT)")
    p.add_argument("project", nargs="?", help="the project folder (default: this one)")
    p.add_argument("--session", metavar="ID", help="only this session's runs")
    p.add_argument("--since", metavar="TIME",
                   help="only runs created at or after this ISO date or time (UTC unless it "
                        "says otherwise)")
    p.set_defaults(func=lambda args: export_traces(args, settings_of(args.project)))
