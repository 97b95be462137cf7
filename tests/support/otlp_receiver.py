"""A bare OTLP/HTTP trace receiver for the tests: an aiohttp server on loopback that decodes
each export request with `opentelemetry-proto` and keeps the spans as they came. `refuse`
makes it answer 503 (a collector that is up but refusing)."""

from __future__ import annotations

import socket
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from tests.support.api import Api
from tests.support.waiting import eventually


def attr_value(value: Any) -> Any:
    kind = value.WhichOneof("value")
    return getattr(value, kind) if kind else None


def attrs(pb_attrs: Any) -> dict[str, Any]:
    return {a.key: attr_value(a.value) for a in pb_attrs}


@dataclass
class WireSpan:
    """One received span, its ids as hex, its attributes and events decoded."""

    service: str
    name: str
    trace_id: str
    span_id: str
    parent_span_id: str
    kind: int
    start_ns: int
    end_ns: int
    attributes: dict[str, Any]
    events: list[tuple[str, dict[str, Any]]]
    links: list[tuple[str, str, dict[str, Any]]]
    status_code: int
    status_message: str


def wire_spans(body: ExportTraceServiceRequest) -> list[WireSpan]:
    """The spans of one export request, decoded (OTLP/HTTP and OTLP/gRPC carry the same
    message)."""
    out = []
    for resource_spans in body.resource_spans:
        service = attrs(resource_spans.resource.attributes).get("service.name", "")
        for scope_spans in resource_spans.scope_spans:
            for s in scope_spans.spans:
                out.append(WireSpan(
                    service, s.name, s.trace_id.hex(), s.span_id.hex(),
                    s.parent_span_id.hex(), s.kind, s.start_time_unix_nano,
                    s.end_time_unix_nano, attrs(s.attributes),
                    [(e.name, attrs(e.attributes)) for e in s.events],
                    [(lk.trace_id.hex(), lk.span_id.hex(), attrs(lk.attributes))
                     for lk in s.links],
                    s.status.code, s.status.message))
    return out


@dataclass
class OtlpReceiver:
    spans: list[WireSpan] = field(default_factory=list)
    requests: int = 0
    refuse: bool = False
    url: str = ""
    _runner: web.AppRunner | None = None

    async def start(self, port: int = 0) -> OtlpReceiver:
        app = web.Application()
        app.router.add_post("/v1/traces", self._take)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        sock = socket.socket()
        sock.bind(("127.0.0.1", port))
        site = web.SockSite(self._runner, sock)
        await site.start()
        self.url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        return self

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _take(self, request: web.Request) -> web.Response:
        self.requests += 1
        if self.refuse:
            return web.Response(status=503)
        body = ExportTraceServiceRequest()
        body.ParseFromString(await request.read())
        self.spans.extend(wire_spans(body))
        return web.Response(body=ExportTraceServiceResponse().SerializeToString(),
                            content_type="application/x-protobuf")

    def of_trace(self, trace_id: str) -> list[WireSpan]:
        return [s for s in self.spans if s.trace_id == trace_id]


async def run_while_refused(api: Api) -> dict[str, Any]:
    """A run sent while the collector refuses every batch: it completes, its answer whole
    (export is never in its way), and `/health` comes to count the refused spans. That
    `/health`'s `tracing`."""
    session = await api.session()
    run = await api.wait_status(await api.start_run(session, "stream one two three"))
    assert run["status"] == "completed"
    assert "".join(p.get("text", "") for p in run["output"]) == "one two three"
    health = await eventually(lambda: api.ok("GET", "/health"),
                              lambda h: h["tracing"]["spans_failed"] > 0,
                              what="the refused spans counted", timeout=30)
    tracing: dict[str, Any] = health["tracing"]
    return tracing
