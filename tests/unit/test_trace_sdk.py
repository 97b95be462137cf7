"""The OpenTelemetry side (daemon/tracing/sdk.py): span descriptions become SDK spans with
their planned ids, parents, times, links, events and status; a failing collector keeps
only a little waiting, and the first batch it takes restores the whole queue; a collector
down for batch after batch is one line in the log."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from llamon_playground.daemon.tracing import ids
from llamon_playground.daemon.tracing.sdk import FAILING_QUEUE_SPANS, SpanSink
from llamon_playground.daemon.tracing.settings import TraceSettings
from llamon_playground.daemon.tracing.spans import RunTraceInput, run_spans
from tests.unit.test_trace_spans import EVENTS, row

SETTINGS = TraceSettings(endpoint="http://127.0.0.1:9", from_env=False)


def test_descriptions_become_sdk_spans_on_their_planned_ids_and_times() -> None:
    memory = InMemorySpanExporter()
    sink = SpanSink(SETTINGS, exporter=memory)
    try:
        descs = run_spans(RunTraceInput(row(id="run_b", parent_run_id="run_a"), EVENTS,
                                        "echo_agent"))
        assert sink.emit(descs)
        assert sink.flush(5)
        got = {s.context.span_id: s for s in memory.get_finished_spans()}
    finally:
        sink.shutdown()
    assert set(got) == {d.span_id for d in descs}
    root = got[ids.run_span_id("run_b")]
    assert root.context.trace_id == ids.trace_id("run_b") and root.parent is None
    assert root.kind == SpanKind.CLIENT and root.status.status_code == StatusCode.OK
    assert (root.start_time, root.end_time) == (descs[0].start_ns, descs[0].end_ns)
    assert [(lk.context.span_id, dict(lk.attributes or {})["llamon.playground.link"])
            for lk in root.links] == [(ids.run_span_id("run_a"), "resumes")]
    assert [e.name for e in root.events] == ["gen_ai.evaluation.result"]
    for desc in descs[1:]:
        span = got[desc.span_id]
        assert span.parent is not None and span.parent.span_id == desc.parent_id
        assert (span.start_time, span.end_time) == (desc.start_ns, desc.end_ns)
    assert sink.counts.exported == len(descs) and sink.counts.pending == 0


class Refusing(SpanExporter):
    """A collector that refuses every batch (the e2e test refuses for real over HTTP; here
    the admission rule is stepped by hand)."""

    def __init__(self) -> None:
        self.refuse = True
        self.batches = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.batches += 1
        return SpanExportResult.FAILURE if self.refuse else SpanExportResult.SUCCESS


def test_a_failing_collector_keeps_only_a_little_waiting_and_recovery_restores_the_queue(
        ) -> None:
    exporter = Refusing()
    sink = SpanSink(SETTINGS, exporter=exporter)
    descs = run_spans(RunTraceInput(row(), EVENTS, "echo_agent"))
    try:
        assert sink.emit(descs)
        assert sink.flush(5)
        assert sink.counts.failing and sink.counts.failed == len(descs)
        # While it fails, a trace is queued only when the little room allows it.
        kept = 0
        for _ in range(100):
            kept += sink.emit(descs)
        assert kept * len(descs) <= FAILING_QUEUE_SPANS + len(descs)
        assert sink.counts.dropped == (100 - kept) * len(descs)
        exporter.refuse = False
        assert sink.flush(5)
        assert sink.emit(descs) and sink.flush(5)
        assert not sink.counts.failing and sink.counts.exported >= len(descs)
    finally:
        sink.shutdown()


class Down(SpanExporter):
    """A collector that is down, its exporter logging each failed batch as the OTLP ones do
    (a warning a retry, an error at the end), on the OTLP/HTTP exporter's own logger."""

    def __init__(self) -> None:
        self.down = True

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if not self.down:
            return SpanExportResult.SUCCESS
        said = logging.getLogger("opentelemetry.exporter.otlp.proto.http.trace_exporter")
        said.warning("Transient error Connection refused encountered while exporting spans "
                     "batch, retrying in 1.02s.")
        said.error("Failed to export spans batch due to timeout, max retries or shutdown.")
        return SpanExportResult.FAILURE


def test_a_collector_down_for_many_batches_is_one_line_and_its_return_one_more(
        caplog: pytest.LogCaptureFixture) -> None:
    exporter = Down()
    sink = SpanSink(SETTINGS, exporter=exporter)
    descs = run_spans(RunTraceInput(row(), EVENTS, "echo_agent"))
    caplog.set_level(logging.INFO)
    try:
        for _ in range(3):  # three batches, each failed
            assert sink.emit(descs) and sink.flush(5)
        exporter.down = False
        for _ in range(2):
            assert sink.emit(descs) and sink.flush(5)
    finally:
        sink.shutdown()
    lines = [(r.levelname, r.getMessage()) for r in caplog.records]
    assert lines == [
        ("WARNING", ("trace export: http://127.0.0.1:9 does not take spans (Transient error "
                    "Connection refused encountered while exporting spans batch); until it "
                    "does, what it does not take is counted in /health's tracing and "
                    "dropped, and this is not said again")),
        ("INFO", (f"trace export: http://127.0.0.1:9 takes spans again ({3 * len(descs)} "
                 "failed meanwhile)"))]
    # Outside a batch's sending, the exporter's logger is heard as ever.
    logging.getLogger("opentelemetry.exporter.otlp.proto.http.trace_exporter").warning("x")
    assert caplog.records[-1].getMessage() == "x"


def test_the_sampler_keeps_or_drops_each_trace_whole_as_its_traceparent_says(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """OTEL_TRACES_SAMPLER decides once a trace: every span of a kept run (its phases,
    nodes) is exported, none of a dropped one's, and the decision is `sampled`, the one the
    run's `traceparent` carries to the Host."""
    monkeypatch.setenv("OTEL_TRACES_SAMPLER", "traceidratio")
    monkeypatch.setenv("OTEL_TRACES_SAMPLER_ARG", "0.5")
    memory = InMemorySpanExporter()
    sink = SpanSink(SETTINGS, exporter=memory, queue_spans=100_000)
    runs = [f"run_{i}" for i in range(40)]
    try:
        for run_id in runs:
            assert sink.emit(run_spans(RunTraceInput(row(id=run_id), EVENTS, "echo_agent")))
        assert sink.flush(5)
        got: dict[int, int] = {}
        for span in memory.get_finished_spans():
            assert span.context is not None
            got[span.context.trace_id] = got.get(span.context.trace_id, 0) + 1
    finally:
        sink.shutdown()
    per_run = len(run_spans(RunTraceInput(row(), EVENTS, "echo_agent")))
    kept = {ids.trace_id(r) for r in runs if sink.sampled(ids.trace_id(r))}
    assert 0 < len(kept) < len(runs)  # the ratio left some out and kept some
    assert got == dict.fromkeys(kept, per_run)
    assert sink.counts.exported == len(kept) * per_run and sink.counts.pending == 0
