"""Export on each run's end: never in the run's way.

The recorder hands a finished run's events over on the loop, in the commit's callback; they
wait in a bounded queue (a full one drops the run, counted) for the export task, which
reads the run's row (one row, never its history), builds its spans and gives them to the
SDK's batch processor, on the loop: handing over finished spans only appends them to the
processor's queue (tens of microseconds a run, less than a hop to a worker thread). The
processor encodes and sends them from its own thread with its own bounded queue: a collector that is down, slow or refusing costs a run nothing,
and what could not be sent is counted, shown in `/health` and `status`.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
from collections.abc import Awaitable, Callable
from contextlib import suppress
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from llamon_playground.daemon.store.database import Store
from llamon_playground.daemon.store.history import get_run
from llamon_playground.daemon.tracing import ids
from llamon_playground.daemon.tracing.recorder import TraceRecorder
from llamon_playground.daemon.tracing.settings import (
    INSTALL_HINT,
    TraceSettings,
    missing_modules,
)
from llamon_playground.daemon.tracing.spans import RunTraceInput, StoredEvent, run_spans, suite_span

if TYPE_CHECKING:
    from llamon_playground.daemon.store.records import EventRow
    from llamon_playground.daemon.tracing.sdk import SpanSink

log = logging.getLogger(__name__)

QUEUE_RUNS = 64  # finished runs waiting for the export task
SHUTDOWN_FLUSH_S = 2.0
TRACESTATE_KEY = "llamonpg"


@dataclass(frozen=True)
class _RunJob:
    run_id: str
    events: list[StoredEvent]
    left_out: int


@dataclass(frozen=True)
class _SuiteJob:
    suite_run_id: str


async def linked_suites(store: Store, run: dict[str, Any]) -> dict[str, str | None]:
    """The suite run of each run this one links to (the run it resumes, its rerun source):
    their spans are in their own traces."""
    wanted = [r for r in (run.get("parent_run_id"), run.get("rerun_of")) if r]
    out: dict[str, str | None] = {}
    for other in wanted:
        row = await store.fetch_one("SELECT suite_run_id FROM runs WHERE id = ?", (other,))
        out[other] = row[0] if row else None
    return out


async def suite_trace(store: Store, suite_run_id: str) -> tuple[dict[str, Any], str] | None:
    """A suite run's row and its suite's name, or None when it is gone."""
    row = await store.fetch_one("SELECT * FROM suite_runs WHERE id = ?", (suite_run_id,))
    if row is None:
        return None
    suite = await store.fetch_one("SELECT name FROM suites WHERE id = ?", (row["suite_id"],))
    return dict(row), (suite[0] if suite else row["suite_id"])


def opentelemetry_loaded() -> bool:
    """Whether any OpenTelemetry module is in this process (never, with export off)."""
    return "opentelemetry" in sys.modules


class TraceExport:
    """The daemon's trace export: `committed` is the store's commit listener, `headers` what
    a run's A2A request carries, `run` the export task (its owner cancels it)."""

    def __init__(self, settings: TraceSettings, store: Store,
                 agent_name: Callable[[], Awaitable[str]],
                 sink: SpanSink | None = None) -> None:
        self.settings = settings
        self._store = store
        self._agent_name = agent_name
        self._sink = sink
        self._queue: asyncio.Queue[_RunJob | _SuiteJob] = asyncio.Queue(QUEUE_RUNS)
        self._recorder = TraceRecorder(self._run_ended, self._suite_ended)
        self.runs_exported = 0
        self.runs_dropped = 0
        self.spans_left_out = 0  # events past a run's cap, or a run whose row is gone
        self.problem: str | None = None  # why nothing is exported although asked

    @classmethod
    def start(cls, settings: TraceSettings, store: Store,
              agent_name: Callable[[], Awaitable[str]]) -> TraceExport | None:
        """Export through OTLP as `settings` say; None when they say nothing (then nothing
        of OpenTelemetry is imported). Set but not installed: said once, nothing exported."""
        if not settings.enabled:
            return None
        missing = missing_modules(settings)
        if not missing:
            try:
                from llamon_playground.daemon.tracing.sdk import SpanSink
                return cls(settings, store, agent_name, SpanSink(settings))
            except ImportError as exc:  # installed, but broken (a dependency of its own gone)
                missing = [exc.name or str(exc)]
        export = cls(settings, store, agent_name)
        export.problem = (f"an OTLP endpoint is set ({settings.endpoint}) but OpenTelemetry "
                          f"is not installed ({', '.join(missing)}): runs are not "
                          f"exported; {INSTALL_HINT}")
        log.warning("%s", export.problem)
        return export

    def committed(self, rows: list[EventRow]) -> None:
        """What the store just committed: a run's span-worthy events kept, an ended run queued."""
        self._recorder.committed(rows)

    def headers(self, run_id: str, suite_run_id: str | None) -> dict[str, str]:
        """W3C trace context for the run's A2A request: the Host's spans join its trace."""
        parent = ids.traceparent(run_id, suite_run_id)
        if self._sink is not None and not self._sink.sampled(ids.trace_id(run_id, suite_run_id)):
            parent = parent[:-2] + "00"
        return {"traceparent": parent, "tracestate": f"{TRACESTATE_KEY}={run_id}"}

    def _run_ended(self, run_id: str, events: list[StoredEvent], left_out: int) -> None:
        self._offer(_RunJob(run_id, events, left_out))

    def _suite_ended(self, suite_run_id: str) -> None:
        self._offer(_SuiteJob(suite_run_id))

    def _offer(self, job: _RunJob | _SuiteJob) -> None:
        try:
            self._queue.put_nowait(job)
        except asyncio.QueueFull:
            self.runs_dropped += 1

    async def run(self) -> None:
        """Export what ends, one trace at a time, until cancelled."""
        while True:
            job = await self._queue.get()
            try:
                await self._export(job)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("trace export of %s failed", job)

    async def _export(self, job: _RunJob | _SuiteJob) -> None:
        if self._sink is None:
            return
        if isinstance(job, _SuiteJob):
            found = await suite_trace(self._store, job.suite_run_id)
            if found is not None:
                self._sink.emit([suite_span(*found)])
            return
        run = await get_run(self._store, job.run_id)
        if run is None:
            self.spans_left_out += 1
            return
        source = RunTraceInput(run, job.events, await self._agent_name(),
                               await linked_suites(self._store, run))
        spans = run_spans(source, capture_content=self.settings.capture_content)
        self.spans_left_out += job.left_out
        if self._sink.emit(spans):
            self.runs_exported += 1

    async def close(self) -> None:
        """Send what is queued, waiting at most SHUTDOWN_FLUSH_S: a collector that is down
        never holds the daemon's stop. The processor's thread is a daemon thread."""
        if self._sink is None:
            return
        sink = self._sink
        loop = asyncio.get_running_loop()
        give_up = loop.time() + SHUTDOWN_FLUSH_S
        while not self._queue.empty() and loop.time() < give_up:
            # The runs that ended as the daemon stopped (the last one, interrupted).
            try:
                await asyncio.wait_for(self._export(self._queue.get_nowait()),
                                       give_up - loop.time())
            except TimeoutError:
                break
            except Exception:
                log.exception("trace export at stop failed")
        done = asyncio.get_running_loop().create_future()

        def settle() -> None:
            if not done.done():
                done.set_result(None)

        def stop() -> None:
            try:
                sink.shutdown()
            finally:
                with suppress(RuntimeError):  # the loop closed: nobody waits any more
                    done.get_loop().call_soon_threadsafe(settle)

        threading.Thread(target=stop, name="trace-export-stop", daemon=True).start()
        try:
            await asyncio.wait_for(asyncio.shield(done), SHUTDOWN_FLUSH_S)
        except TimeoutError:
            log.warning("trace export: the collector did not take the last spans in %.0f s",
                        SHUTDOWN_FLUSH_S)

    def health(self) -> dict[str, Any]:
        """What `/health` and `status` say of it."""
        doc = tracing_health(self.settings, self.problem)
        doc.update(enabled=self._sink is not None, runs_exported=self.runs_exported,
                   runs_dropped=self.runs_dropped, spans_dropped=self.spans_left_out)
        if self._sink is not None:
            counts = self._sink.counts
            doc.update(spans_exported=counts.exported, spans_failed=counts.failed,
                       spans_pending=counts.pending,
                       spans_dropped=counts.dropped + counts.failed + self.spans_left_out)
        return doc


def tracing_health(settings: TraceSettings | None = None,
                   problem: str | None = None) -> dict[str, Any]:
    """`/health`'s `tracing`; as it is with no endpoint set (nothing started or imported)."""
    return {"enabled": False,
            "endpoint": settings.endpoint if settings else None,
            "protocol": settings.protocol if settings and settings.enabled else None,
            "problem": problem, "runs_exported": 0, "runs_dropped": 0, "spans_exported": 0,
            "spans_failed": 0, "spans_dropped": 0, "spans_pending": 0,
            "opentelemetry_loaded": opentelemetry_loaded()}
