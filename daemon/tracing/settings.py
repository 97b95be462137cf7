"""Whether runs are exported as traces, where to and how: the standard OpenTelemetry switches.

`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or `OTEL_EXPORTER_OTLP_ENDPOINT` (or the project's
`[tool.llamon.playground] otlp_endpoint`) turns export on; unset, nothing of OpenTelemetry
is imported. The exporter reads the rest of the `OTEL_*` variables itself (headers, service
name, resource attributes, sampler, timeouts). Read once, from the environment the daemon
was started with.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

INSTALL_HINT = "pip install 'llamon-playground[otel]'"
TRACES_PATH = "/v1/traces"
CAPTURE_SWITCH = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
CAPTURE_ON = frozenset({"true", "1", "yes", "span_only", "span_and_event"})
GRPC_PORT = 4317
SERVICE = "llamon-playground"


@dataclass(frozen=True)
class TraceSettings:
    """Export's switches. `endpoint` None: off. `from_env`: the exporter finds the endpoint in
    the environment itself (a signal endpoint as given, a base one with /v1/traces)."""

    endpoint: str | None = None
    protocol: str = "http/protobuf"  # or "grpc"
    from_env: bool = False
    capture_content: bool = False
    service_name: str = SERVICE

    @property
    def enabled(self) -> bool:
        """Whether export is on: an OTLP endpoint was found."""
        return self.endpoint is not None


def trace_settings(environ: Mapping[str, str], project_endpoint: object = None
                   ) -> TraceSettings:
    """The switches from the daemon's environment, else the project's `otlp_endpoint`."""
    capture = environ.get(CAPTURE_SWITCH, "").strip().lower() in CAPTURE_ON
    service = environ.get("OTEL_SERVICE_NAME", "").strip() or SERVICE
    endpoint = (environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
                or environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or "").strip()
    from_env = bool(endpoint)
    if not endpoint and isinstance(project_endpoint, str) and project_endpoint.strip():
        endpoint = project_endpoint.strip()
    if (not endpoint or environ.get("OTEL_TRACES_EXPORTER", "").strip().lower() == "none"
            or environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true"):
        return TraceSettings(capture_content=capture, service_name=service)
    protocol = (environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
                or environ.get("OTEL_EXPORTER_OTLP_PROTOCOL") or "").strip().lower()
    if not protocol:
        # The endpoint says so: OTLP/gRPC's own port.
        protocol = "grpc" if urlsplit(endpoint).port == GRPC_PORT else "http/protobuf"
    return TraceSettings(endpoint, "grpc" if protocol == "grpc" else "http/protobuf",
                         from_env, capture, service)


def signal_endpoint(settings: TraceSettings) -> str | None:
    """The URL the HTTP exporter is given: None lets it read the environment; a project's
    base endpoint gets the traces path, as the environment's would."""
    if settings.from_env or settings.endpoint is None:
        return None
    if settings.protocol == "grpc" or settings.endpoint.rstrip("/").endswith(TRACES_PATH):
        return settings.endpoint
    return settings.endpoint.rstrip("/") + TRACES_PATH


def missing_modules(settings: TraceSettings) -> list[str]:
    """The modules export needs that are not installed (found without importing them)."""
    needed = ["opentelemetry.sdk.trace"]
    if settings.protocol == "grpc":
        # grpcio too: the exporter's package is found without it, and fails on import.
        needed += ["grpc", "opentelemetry.exporter.otlp.proto.grpc.trace_exporter"]
    else:
        needed += ["opentelemetry.exporter.otlp.proto.http.trace_exporter"]
    missing = []
    for name in needed:
        try:
            found = importlib.util.find_spec(name) is not None
        except ModuleNotFoundError:
            found = False
        if not found:
            missing.append(name)
    return missing
