"""What the front must know of the daemon's routes, declared once: which answer as streams
(the front lends their connections to the daemon, api/handover.py) and which take a body
larger than the small one every other route takes (api/limits.py).

The daemon's OpenAPI document (daemon/http/openapi.py) marks the stream routes declared
here as `text/event-stream`, so a stream route the daemon adds is declared here, once, and
the front lends it from then on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from functools import cache

from llamon_playground.common.contract import API_PREFIX
from llamon_playground.common.limits import MIB

IMPORT_BODY_BYTES = 256 * MIB  # a bundle import carries every blob of the bundle


@dataclass(frozen=True)
class StreamRoute:
    """A `GET` route (under the API prefix) whose answer is a stream; `when` names a query
    parameter without which it answers a document instead (the Host log's `follow`)."""

    path: str
    when: str | None = None


STREAM_ROUTES: tuple[StreamRoute, ...] = (
    StreamRoute("/runs/{run_id}/events"),
    StreamRoute("/events"),
    StreamRoute("/host/logs", when="follow"),
    StreamRoute("/suite-runs/{suite_run_id}/events"),
)


class Body(Enum):
    """How large a route's request body may be."""

    SMALL = "small"  # 1 MiB: a JSON document
    RUN = "run"  # a run's input with inline files: the setting max_request_bytes
    IMPORT = "import"  # IMPORT_BODY_BYTES


LARGE_BODIES: dict[tuple[str, str], Body] = {
    ("POST", "/sessions/{session_id}/runs"): Body.RUN,
    ("POST", "/runs/{run_id}/resume"): Body.RUN,
    ("POST", "/bundles/import"): Body.IMPORT,
}


def _pattern(path: str) -> re.Pattern[str]:
    """A declared path as a regular expression over a request's path (one segment a
    parameter)."""
    parts = re.split(r"(\{[^}]+\})", API_PREFIX + path)
    return re.compile("".join("[^/]+" if p.startswith("{") else re.escape(p) for p in parts))


@dataclass(frozen=True)
class FrontRoutes:
    """The front's tables, made from the declarations above."""

    streams: tuple[tuple[re.Pattern[str], str | None], ...]
    bodies: tuple[tuple[str, re.Pattern[str], Body], ...]

    def is_stream(self, method: str, path: str, query: frozenset[str]) -> bool:
        """Whether `method path` with these query parameter names answers a stream."""
        return method == "GET" and any(
            pattern.fullmatch(path) is not None and (when is None or when in query)
            for pattern, when in self.streams)

    def body(self, method: str, path: str) -> Body:
        """How large `method path`'s body may be."""
        for declared, pattern, kind in self.bodies:
            if declared == method and pattern.fullmatch(path) is not None:
                return kind
        return Body.SMALL


@cache
def front_routes() -> FrontRoutes:
    """The front's view of the daemon's routes: streams to lend, bodies' limits."""
    return FrontRoutes(
        streams=tuple((_pattern(r.path), r.when) for r in STREAM_ROUTES),
        bodies=tuple((method, _pattern(path), kind)
                     for (method, path), kind in LARGE_BODIES.items()))
