"""OpenTelemetry for a Host, when it is asked for and installed: the standard ASGI
instrumentation (a server span per request, its parent taken from the request's W3C
`traceparent`, so the Playground's run span is its parent) and a span around the agent's
work, exported over OTLP as the standard `OTEL_*` variables say.

Off (the app and the executor returned as they are) unless `OTEL_EXPORTER_OTLP_ENDPOINT`
or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is set and `llamon-playground[otel]` is installed.
The Host inherits the daemon's environment, so one switch turns on both.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
GRPC_PORT = 4317


def wanted(environ: Mapping[str, str] | None = None) -> bool:
    env = os.environ if environ is None else environ
    return any(env.get(name, "").strip() for name in ENDPOINT_VARIABLES)


_provider: Any = None


def _tracer_provider() -> Any:
    """This process's tracer provider exporting over OTLP, made once; None when OpenTelemetry
    is not wanted or not installed."""
    global _provider  # noqa: PLW0603 - one provider a Host process, made on first use
    if _provider is None and wanted():
        protocol = (os.environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
                    or os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL") or "").strip().lower()
        if not protocol:  # as the daemon reads it: OTLP/gRPC's own port says gRPC
            endpoint = next(os.environ[n] for n in ENDPOINT_VARIABLES if os.environ.get(n))
            protocol = "grpc" if urlsplit(endpoint.strip()).port == GRPC_PORT else ""
        try:
            from opentelemetry import trace
            from opentelemetry.sdk.resources import SERVICE_NAME, Resource
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
            exporter: SpanExporter
            if protocol == "grpc":
                from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
                    OTLPSpanExporter as GrpcExporter,
                )
                exporter = GrpcExporter()
            else:
                from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
                    OTLPSpanExporter,
                )
                exporter = OTLPSpanExporter()
        except ImportError:
            return None  # the daemon says what to install; the Host runs on untraced
        name = os.environ.get("OTEL_SERVICE_NAME") or os.path.basename(os.getcwd()) or "host"
        _provider = TracerProvider(resource=Resource.create({SERVICE_NAME: name}))
        _provider.add_span_processor(BatchSpanProcessor(exporter))
        trace.set_tracer_provider(_provider)
    return _provider


def traced_app(app: Any) -> Any:
    """The ASGI app in the standard instrumentation's middleware (a server span per request,
    its parent the request's `traceparent`), or as given."""
    provider = _tracer_provider()
    if provider is None:
        return app
    from opentelemetry.instrumentation.asgi import OpenTelemetryMiddleware
    return OpenTelemetryMiddleware(app, tracer_provider=provider)


def traced_executor(executor: Any, agent_name: str) -> Any:
    """The agent executor with its `execute` in a span, or as given."""
    provider = _tracer_provider()
    if provider is None:
        return executor
    return TracedExecutor(executor, provider.get_tracer(agent_name), agent_name)


class TracedExecutor:
    """An agent executor whose `execute` runs in an `invoke_agent` span (the server span of
    the request is its parent); everything else is the wrapped executor's."""

    def __init__(self, inner: Any, tracer: Any, agent_name: str) -> None:
        self._inner = inner
        self._tracer = tracer
        self._agent_name = agent_name

    async def execute(self, context: Any, event_queue: Any) -> None:
        with self._tracer.start_as_current_span(
                f"invoke_agent {self._agent_name}",
                attributes={"gen_ai.operation.name": "invoke_agent",
                            "gen_ai.agent.name": self._agent_name,
                            "gen_ai.conversation.id": context.context_id or ""}):
            await self._inner.execute(context, event_queue)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)
