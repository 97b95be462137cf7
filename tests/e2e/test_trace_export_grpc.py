"""Runs exported over OTLP/gRPC when the standard protocol variable says so, read off the
wire by a bare gRPC receiver (grpcio serving opentelemetry-proto's TraceService): the real
daemon's spans and the bundled example Host's, in one trace."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from llamon_playground.daemon.tracing import ids
from tests.support.api import Api
from tests.support.otlp_grpc_receiver import GrpcOtlpReceiver
from tests.support.otlp_receiver import run_while_refused
from tests.support.procs import Stack, copy_example, stack_for
from tests.support.waiting import eventually

CLIENT, SERVER = 3, 2  # SpanKind in the protobuf


@pytest.fixture
def receiver() -> Iterator[GrpcOtlpReceiver]:
    rx = GrpcOtlpReceiver().start()
    yield rx
    rx.close()


@pytest.fixture
async def api_of(request: pytest.FixtureRequest, tmp_path: Path, runtime_base: Path,
                 receiver: GrpcOtlpReceiver) -> AsyncIterator[tuple[Stack, Api]]:
    """The daemon, told gRPC by the general variables or by the traces ones."""
    if request.param == "general":
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url,
               "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}
    else:
        env = {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": receiver.url,
               "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc"}
    with stack_for(copy_example(tmp_path), runtime_base,
                   extra_env={**env, "OTEL_BSP_SCHEDULE_DELAY": "100"}) as stack:
        stack.start_daemon()
        client = Api.for_socket(str(stack.settings.socket_path))
        try:
            yield stack, client
        finally:
            await client.close()


@pytest.mark.parametrize("api_of", ["general", "traces"], indirect=True)
async def test_a_run_goes_over_grpc_with_the_hosts_spans_in_its_trace(
        api_of: tuple[Stack, Api], receiver: GrpcOtlpReceiver) -> None:
    stack, api = api_of
    session = await api.session()
    run = await api.wait_status(await api.start_run(session, "stream hello big world"))
    assert run["status"] == "completed"
    trace = f"{ids.trace_id(run['id']):032x}"
    run_span = f"{ids.run_span_id(run['id']):016x}"
    # The Host inherited the variables: its server span, under the run's, came over gRPC too.
    await eventually(lambda: receiver.of_trace(trace),
                     lambda spans: any(s.name == "complete" for s in spans)
                     and any(s.kind == SERVER and s.name == "POST /" for s in spans),
                     what="the daemon's and the Host's spans at the gRPC receiver")
    spans = receiver.of_trace(trace)
    ours = {s.span_id: s for s in spans if s.service == "llamon-playground"}
    root = ours[run_span]
    assert root.kind == CLIENT and root.parent_span_id == ""
    assert root.name == "invoke_agent echo_agent"
    assert root.attributes["llamon.playground.run.id"] == run["id"]
    assert root.attributes["llamon.playground.run.status"] == "completed"
    assert {s.name for s in ours.values()} >= {"validate", "save", "ready", "send", "complete",
                                               "node echo"}
    server = [s for s in spans if s.kind == SERVER and s.name == "POST /"]
    assert all(s.parent_span_id == run_span and s.service != "llamon-playground"
               for s in server)

    tracing = await eventually(lambda: api.ok("GET", "/health"),
                               lambda h: h["tracing"]["spans_pending"] == 0,
                               what="nothing waiting")
    tracing = tracing["tracing"]
    assert tracing["enabled"] and tracing["protocol"] == "grpc"
    assert tracing["endpoint"] == receiver.url
    assert tracing["runs_exported"] == 1 and tracing["spans_exported"] == len(ours)
    assert tracing["spans_dropped"] == 0

    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "llamon_playground", "status", str(stack.project),
        env=stack.env, stdout=asyncio.subprocess.PIPE)
    out, _ = await proc.communicate()
    line = next(ln for ln in out.decode().splitlines() if ln.startswith("traces:"))
    assert line.startswith(f"traces:     to {receiver.url} (grpc): 1 runs, ")


@pytest.mark.parametrize("api_of", ["general"], indirect=True)
async def test_a_refusing_grpc_collector_costs_the_run_nothing_and_is_counted(
        api_of: tuple[Stack, Api], receiver: GrpcOtlpReceiver) -> None:
    receiver.refuse = True
    tracing = await run_while_refused(api_of[1])
    assert tracing["spans_exported"] == 0
    assert receiver.requests > 0 and not receiver.spans
