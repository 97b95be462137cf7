"""A bare OTLP/gRPC trace receiver for the tests: a grpcio server on loopback serving
`opentelemetry-proto`'s TraceService, keeping the spans of each ExportTraceServiceRequest
as they came. It serves from grpcio's own threads, so it answers while the test's loop
waits; `refuse` makes it answer UNAVAILABLE (a collector that is up but refusing)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2_grpc import (
    TraceServiceServicer,
    add_TraceServiceServicer_to_server,
)

from tests.support.otlp_receiver import WireSpan, wire_spans


class GrpcOtlpReceiver(TraceServiceServicer):  # type: ignore[misc]
    """`url` is what OTEL_EXPORTER_OTLP_ENDPOINT takes (http: plaintext gRPC)."""

    def __init__(self) -> None:
        self.spans: list[WireSpan] = []
        self.requests = 0
        self.refuse = False
        self.url = ""
        self._lock = threading.Lock()
        self._server: grpc.Server | None = None

    def start(self) -> GrpcOtlpReceiver:
        self._server = grpc.server(ThreadPoolExecutor(max_workers=2))
        add_TraceServiceServicer_to_server(self, self._server)
        port = self._server.add_insecure_port("127.0.0.1:0")
        self._server.start()
        self.url = f"http://127.0.0.1:{port}"
        return self

    def close(self) -> None:
        if self._server is not None:
            self._server.stop(grace=None).wait(5)

    def Export(self, request: ExportTraceServiceRequest,  # the servicer names it
               context: Any) -> ExportTraceServiceResponse:
        with self._lock:
            self.requests += 1
            if self.refuse:
                context.abort(grpc.StatusCode.UNAVAILABLE, "refusing")
            self.spans.extend(wire_spans(request))
        return ExportTraceServiceResponse()

    def of_trace(self, trace_id: str) -> list[WireSpan]:
        with self._lock:
            return [s for s in self.spans if s.trace_id == trace_id]
