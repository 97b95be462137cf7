"""The front's view of the daemon's routes: which answer as streams (the front lends their
connections to the daemon, api/handover.py) and which take a body larger than the small one
every other route takes (api/limits.py), as request-path matchers made from the one route
declaration (common/wire/routes.py). A stream route the daemon adds there is lent from then on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from llamon_playground.common.contract import API_PREFIX
from llamon_playground.common.wire.routes import (
    IMPORT_BODY_BYTES,
    Body,
    StreamRoute,
    large_bodies,
    stream_routes,
)

__all__ = ["IMPORT_BODY_BYTES", "Body", "FrontRoutes", "StreamRoute", "front_routes"]


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
        streams=tuple((_pattern(r.path), r.when) for r in stream_routes()),
        bodies=tuple((method, _pattern(path), kind)
                     for (method, path), kind in large_bodies().items()))
