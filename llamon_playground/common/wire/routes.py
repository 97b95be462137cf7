"""Every route of the daemon's HTTP surface, declared once: its method, its path, the handler
that serves it, whether it answers a stream, and how large a body it takes.

Read three ways: the daemon binds each route to its handler from here
(`daemon/http/util.py`, `bind`), the OpenAPI document takes each operation's method, path and
stream-ness from here (`daemon/http/openapi.py` adds only the words a reader needs), and the
front asks `stream_routes()` and `large_bodies()` which routes to lend and which bodies to
let through larger. A route the daemon adds is one line here.

"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from functools import cache

from llamon_playground.common.contract import API_PREFIX
from llamon_playground.common.limits import MIB

__all__ = ["CAPTURE_PATH", "IMPORT_BODY_BYTES", "ROUTES", "Body", "Route", "StreamRoute",
           "FrontRoutes", "by_handler", "front_routes", "large_bodies", "served_by", "stream_paths",
           "stream_routes"]

IMPORT_BODY_BYTES = 256 * MIB  # a bundle import carries every blob of the bundle
CAPTURE_PATH = "/capture/v1/events"  # the Host's capture hook: daemon socket only


class Body(Enum):
    """How large a route's request body may be."""

    SMALL = "small"  # 1 MiB: a JSON document
    RUN = "run"  # a run's input with inline files: the setting max_request_bytes
    IMPORT = "import"  # IMPORT_BODY_BYTES


@dataclass(frozen=True)
class Route:
    """One route. `path` is under the API prefix unless it starts with "//" (then it is
    served at the root); `handler` is "<group>.<method>": the daemon's handler object for
    `group` serves it with its method of that name. `stream` is True for a route that always
    answers a stream, or the query parameter without which it answers a document instead.
    `public` is False for the one route the front never relays (the capture hook);
    `front` is True for the front's own route (the daemon never sees it)."""

    method: str
    path: str
    handler: str
    stream: bool | str = False
    body: Body = Body.SMALL
    public: bool = True
    front: bool = False

    @property
    def full_path(self) -> str:
        """The path a request names."""
        return self.path[1:] if self.path.startswith("//") else API_PREFIX + self.path

    @property
    def group(self) -> str:
        """The handler object's group ("runs", "host", ...)."""
        return self.handler.split(".", 1)[0]

    @property
    def name(self) -> str:
        """The handler's method name on its group's object."""
        return self.handler.split(".", 1)[1]


R = Route
ROUTES: tuple[Route, ...] = (
    R("GET", "//health", "runs.health"),
    R("GET", "/openapi.json", "openapi.openapi_json"),
    # sessions and runs
    R("GET", "/sessions", "runs.list_sessions"),
    R("POST", "/sessions", "runs.create_session"),
    R("DELETE", "/sessions", "data.delete_all"),
    R("GET", "/sessions/{session_id}", "runs.get_session"),
    R("PATCH", "/sessions/{session_id}", "edits.patch_session"),
    R("DELETE", "/sessions/{session_id}", "data.delete_session"),
    R("GET", "/sessions/{session_id}/runs", "runs.list_runs"),
    R("POST", "/sessions/{session_id}/runs", "runs.create_run", body=Body.RUN),
    R("GET", "/runs/{run_id}", "runs.get_run"),
    R("PATCH", "/runs/{run_id}", "edits.patch_run"),
    R("GET", "/runs/{run_id}/lineage", "edits.get_lineage"),
    R("DELETE", "/runs/{run_id}", "runs.cancel_run"),
    R("POST", "/runs/{run_id}/resume", "runs.resume_run", body=Body.RUN),
    R("POST", "/runs/{run_id}/rerun", "runs.rerun_run", body=Body.RUN),  # may replace parts
    R("GET", "/runs/{run_id}/events", "runs.run_events", stream=True),
    R("GET", "/runs/{run_id}/{side}/{index}/content", "runs.part_content"),
    R("GET", "/runs/{run_id}/snippets", "introspect.run_snippets"),
    # data
    R("GET", "/files/{sha256}", "data.get_file"),
    R("GET", "/search", "search.search"),
    R("GET", "/compare", "data.compare"),
    R("POST", "/bundles/export", "data.export"),
    R("POST", "/bundles/import", "data.import_", body=Body.IMPORT),
    R("GET", "/history", "upkeep.report"),
    R("POST", "/history/trim", "upkeep.trim"),
    # introspection
    R("GET", "/composer-schema", "introspect.composer_schema"),
    R("GET", "/source-targets/{node_id}", "introspect.source_target"),
    # Host
    R("GET", "/host", "host.host_status"),
    R("POST", "/host/start", "host.host_start"),
    R("POST", "/host/stop", "host.host_stop"),
    R("POST", "/host/restart", "host.host_restart"),
    R("GET", "/host/logs", "host.host_logs", stream="follow"),
    R("GET", "/events", "host.project_events", stream=True),
    R("POST", "/" + CAPTURE_PATH, "capture.capture", public=False),
    # suites
    R("POST", "/suites", "suites.create"),
    R("GET", "/suites", "suites.list_suites"),
    R("GET", "/suites/{suite_id}", "suites.get"),
    R("PATCH", "/suites/{suite_id}", "suites.patch"),
    R("DELETE", "/suites/{suite_id}", "suites.delete"),
    R("POST", "/suites/{suite_id}/runs", "suites.start"),
    R("POST", "/suites/{suite_id}/file", "suites.save"),
    R("GET", "/suites/{suite_id}/runs", "suites.runs"),
    R("GET", "/suite-runs/{suite_run_id}", "suites.report"),
    R("DELETE", "/suite-runs/{suite_run_id}", "suites.cancel"),
    R("GET", "/suite-runs/{suite_run_id}/events", "suites.events", stream=True),
    R("GET", "/suite-runs/{suite_run_id}/cases/{case_id}", "suites.case"),
    # the front's own
    R("GET", "//", "front.landing", front=True),
)


def served_by(group: str) -> tuple[Route, ...]:
    """The daemon's routes one handler group serves, in declaration order."""
    return tuple(r for r in ROUTES if r.group == group and not r.front)


@cache
def by_handler() -> dict[str, Route]:
    """Each route by its handler ("<group>.<method>"); a handler serves one route."""
    table = {r.handler: r for r in ROUTES}
    assert len(table) == len(ROUTES), "a handler is declared for two routes"
    return table


@dataclass(frozen=True)
class StreamRoute:
    """A `GET` route (under the API prefix) whose answer is a stream; `when` names a query
    parameter without which it answers a document instead (the Host log's `follow`)."""

    path: str
    when: str | None = None


def stream_routes() -> tuple[StreamRoute, ...]:
    """The routes that answer streams (the front lends their connections to the daemon)."""
    return tuple(StreamRoute(r.path, r.stream if isinstance(r.stream, str) else None)
                 for r in ROUTES if r.stream and r.method == "GET")


def stream_paths() -> tuple[str, ...]:
    """The full paths (with `{parameters}`) of the routes that may answer a stream."""
    return tuple(API_PREFIX + s.path for s in stream_routes())


def large_bodies() -> dict[tuple[str, str], Body]:
    """(method, path under the prefix) of each route whose body may be larger than SMALL."""
    return {(r.method, r.path): r.body for r in ROUTES if r.body is not Body.SMALL}


# The front's view of these routes, as matchers over a request's path.

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
