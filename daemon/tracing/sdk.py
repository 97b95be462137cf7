"""The OpenTelemetry side: the only module that imports it, and only when export is on.

A provider of our own (never the process's global one) with a `BatchSpanProcessor` and an
OTLP exporter (HTTP/protobuf, or gRPC). Span descriptions become finished SDK spans
(`ReadableSpan`) with the ids `ids` derived and their own start and end times, handed to the
processor as the SDK's tracer hands a span that ends; the provider's sampler decides each
trace whole, as a run's `traceparent` says. The exporter is wrapped to count what reached the collector and
what did not; what the batch processor's queue has no room for is never handed to it, and
is counted as dropped here.

A collector that stops taking spans is said once in the daemon's log, and once more when it
takes them again: the exporters' own lines for each failed batch (a warning a retry, an error
at the end, every few seconds for as long as it is down) are held back.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import Event, ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.sampling import Decision
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags

from llamon_playground.daemon.tracing.settings import TraceSettings, signal_endpoint
from llamon_playground.daemon.tracing.spans import SpanDesc

log = logging.getLogger(__name__)

INSTRUMENTATION = "llamon_playground.daemon.tracing"
QUEUE_SPANS = 2048  # the batch processor's queue: spans waiting for the collector, at most
# While the collector fails (down, refusing), this many at most: a stopped collector must
# not fill the daemon with spans it will likely never take (measured: a full queue of 2,048
# spans is ~10 MB of RSS). The first batch it takes again restores the whole queue.
FAILING_QUEUE_SPANS = 128
BATCH_SPANS = 512
SCHEDULE_MS = 1000
EXPORT_TIMEOUT_S = 5.0
KINDS = {"client": SpanKind.CLIENT, "internal": SpanKind.INTERNAL}
STATUSES = {"ok": StatusCode.OK, "error": StatusCode.ERROR}
UNSET = Status(StatusCode.UNSET)
SAMPLED = TraceFlags(TraceFlags.SAMPLED)


@dataclass
class Counts:
    """What became of the spans handed over (read by /health from the loop; written by the
    processor's thread, each a plain int update)."""

    submitted: int = 0
    exported: int = 0
    failed: int = 0  # the collector refused them, or could not be reached in time
    dropped: int = 0  # never handed over: the queue had no room
    failing: bool = False  # the last batch did not reach the collector
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def pending(self) -> int:
        return self.submitted - self.exported - self.failed


# The OTLP exporters' loggers (the HTTP one's client logs on its exporter's logger).
EXPORTER_LOGGERS = ("opentelemetry.exporter.otlp.proto.http.trace_exporter",
                    "opentelemetry.exporter.otlp.common.http",
                    "opentelemetry.exporter.otlp.proto.grpc.exporter")
REASON_CHARS = 300
RETRYING = re.compile(r",? retrying in [\d.]+ ?s\.?")


class BatchLines(logging.Filter):
    """Holds back what an exporter logs while it sends a batch on this thread, keeping the
    first line (its reason) for the one line the daemon says instead."""

    def __init__(self) -> None:
        super().__init__()
        self._local = threading.local()

    def begin(self) -> None:
        self._local.sending, self._local.first = True, None

    def end(self) -> str | None:
        self._local.sending = False
        first: str | None = self._local.first
        return first

    def filter(self, record: logging.LogRecord) -> bool:
        if not getattr(self._local, "sending", False):
            return True
        if self._local.first is None:  # its "retrying in 1s" is not ours to say
            self._local.first = RETRYING.sub("", record.getMessage())[:REASON_CHARS]
        return False


BATCH_LINES = BatchLines()  # one for the process: a logger's filters are its own, global


class CountingExporter(SpanExporter):
    """The OTLP exporter, counting each batch's outcome and saying a change of it once."""

    def __init__(self, inner: SpanExporter, counts: Counts, endpoint: str | None = None
                 ) -> None:
        self._inner = inner
        self._counts = counts
        self._endpoint = endpoint or "the collector"
        self._failed_since = 0  # spans failed since the collector last took a batch
        for name in EXPORTER_LOGGERS:
            logging.getLogger(name).addFilter(BATCH_LINES)  # once: a filter is added once

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        BATCH_LINES.begin()
        try:
            result = self._inner.export(spans)
        except Exception:  # the exporter's own bug: counted, never raised into the SDK
            log.exception("trace export failed")
            result = SpanExportResult.FAILURE
        finally:
            reason = BATCH_LINES.end()
        failing = result != SpanExportResult.SUCCESS
        with self._counts.lock:
            was_failing, self._counts.failing = self._counts.failing, failing
            if failing:
                self._counts.failed += len(spans)
            else:
                self._counts.exported += len(spans)
        if failing and not was_failing:
            log.warning("trace export: %s does not take spans (%s); until it does, what it "
                        "does not take is counted in /health's tracing and dropped, and this "
                        "is not said again", self._endpoint, reason or "no reason given")
        elif was_failing and not failing:
            log.info("trace export: %s takes spans again (%d failed meanwhile)",
                     self._endpoint, self._failed_since)
        self._failed_since = self._failed_since + len(spans) if failing else 0
        return result

    def shutdown(self) -> None:
        self._inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self._inner.force_flush(timeout_millis)


def otlp_exporter(settings: TraceSettings) -> SpanExporter:
    endpoint = signal_endpoint(settings)
    if settings.protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
            OTLPSpanExporter as GrpcExporter,
        )
        return GrpcExporter(endpoint=endpoint, timeout=EXPORT_TIMEOUT_S)
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    return OTLPSpanExporter(endpoint=endpoint, timeout=EXPORT_TIMEOUT_S)


class SpanSink:
    """Feeds span descriptions to the SDK. Not thread-safe: one caller (the loop, or the
    back-fill command) at a time."""

    def __init__(self, settings: TraceSettings, exporter: SpanExporter | None = None,
                 queue_spans: int = QUEUE_SPANS) -> None:
        self.counts = Counts()
        self._queue_spans = queue_spans
        # OTEL_RESOURCE_ATTRIBUTES is read by the SDK; OTEL_SERVICE_NAME by the settings.
        resource = Resource.create({SERVICE_NAME: settings.service_name})
        # Its shutdown is ours, bounded (service.close): an atexit one could wait out a
        # collector that is down.
        self._provider = TracerProvider(resource=resource, shutdown_on_exit=False)
        self._processor = BatchSpanProcessor(
            CountingExporter(exporter or otlp_exporter(settings), self.counts,
                             settings.endpoint),
            max_queue_size=queue_spans, max_export_batch_size=min(BATCH_SPANS, queue_spans),
            schedule_delay_millis=SCHEDULE_MS)
        self._provider.add_span_processor(self._processor)
        self._scope = InstrumentationScope(INSTRUMENTATION)

    def sampled(self, trace_id: int) -> bool:
        """Whether the sampler keeps a trace whose root has this id (a run's traceparent
        says so, and a Host's spans follow it)."""
        result = self._provider.sampler.should_sample(None, trace_id, "invoke_agent",
                                                      SpanKind.CLIENT)
        return result.decision == Decision.RECORD_AND_SAMPLE

    def emit(self, spans: list[SpanDesc]) -> bool:
        """Hand one trace's spans to the batch processor (parents first), or none of them
        when its queue has no room for all: False, counted as dropped.

        Each span is made finished, as the SDK's public `ReadableSpan`, and given to the
        processor's `on_end`, as the SDK's own tracer does when a span ends: a description
        already has its ids, times, capped attributes and events, so the tracer's per-span
        work (a live span, its lock, attribute checks, a context for each child) was a
        third of a short run's export cost, spent for nothing."""
        sampled = {trace_id: self.sampled(trace_id)
                   for trace_id in {desc.trace_id for desc in spans}}
        kept = [desc for desc in spans if sampled[desc.trace_id]]
        with self.counts.lock:
            room = FAILING_QUEUE_SPANS if self.counts.failing else self._queue_spans
            alone = self.counts.pending == 0 and len(kept) <= self._queue_spans
            if self.counts.pending + len(kept) > room and not alone:
                self.counts.dropped += len(kept)
                return False
            self.counts.submitted += len(kept)
        for desc in kept:
            self._processor.on_end(self._finished(desc))
        return True

    def _finished(self, desc: SpanDesc) -> ReadableSpan:
        parent = None
        if desc.parent_id is not None:
            parent = SpanContext(desc.trace_id, desc.parent_id, is_remote=desc.remote_parent,
                                 trace_flags=SAMPLED)
        links = [Link(SpanContext(link.trace_id, link.span_id, is_remote=True,
                                  trace_flags=SAMPLED), link.attributes)
                 for link in desc.links]
        events = [Event(event.name, event.attributes, timestamp=event.ts_ns)
                  for event in desc.events]
        status = (Status(STATUSES[desc.status], desc.status_message
                         if desc.status == "error" else None)
                  if desc.status in STATUSES else UNSET)
        return ReadableSpan(
            desc.name, SpanContext(desc.trace_id, desc.span_id, is_remote=False,
                                   trace_flags=SAMPLED),
            parent=parent, resource=self._provider.resource, attributes=desc.attributes,
            events=events, links=links, kind=KINDS[desc.kind], status=status,
            start_time=desc.start_ns, end_time=desc.end_ns,
            instrumentation_scope=self._scope)

    def flush(self, timeout_s: float) -> bool:
        """Wait (bounded) until what was handed over has been sent or given up on."""
        return self._processor.force_flush(int(timeout_s * 1000))

    def shutdown(self) -> None:
        """Stop the processor's thread; whatever is still queued is sent once, if it can be."""
        self._provider.shutdown()
