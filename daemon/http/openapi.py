"""The OpenAPI 3.1 document of the public Playground API, and its route.

Every route is declared once, in common/wire/routes.py (method, path, handler, stream,
body size): the daemon's router is bound from it, and here one `Op` per route adds what a
reader needs (summary, answer, parameters, errors), found by the route's handler; a route
declared without an `Op` here, or an `Op` for no route, fails at import. Path
parameters, the error answers every route shares (the front's 401/403/413/415/503, the
daemon's 500) and the security schemes are filled in by `build_document`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from types import SimpleNamespace
from typing import Any

from aiohttp import web

from llamon_playground import __version__
from llamon_playground.common.contract import API_PREFIX, RunStatus
from llamon_playground.common.http_json import json_response
from llamon_playground.common.wire.routes import ROUTES, Route, by_handler
from llamon_playground.daemon.http.openapi_schemas import NONEMPTY, SCHEMAS, STR, Schema, ref
from llamon_playground.daemon.http.util import bind

PREFIX = API_PREFIX
JSON = "application/json"
SSE = "text/event-stream"
# One server-sent event: `event` names it, `data` is one JSON document, `id` its cursor.
SSE_EVENT = {"type": "object", "required": ["data"],
             "properties": {"event": STR, "data": STR, "id": STR, "retry": {"type": "integer"}}}
DIGITS: Schema = {"type": "string", "pattern": "^[0-9]{1,18}$"}
# A cursor header: an empty one is taken as none (a client that has seen no event yet).
HEADER_CURSOR: Schema = {"type": "string", "pattern": "^[0-9]{0,18}$"}


@dataclass(frozen=True)
class Param:
    """A query or path parameter of one operation, as the document states it."""

    name: str
    schema: Schema
    where: str = "query"
    description: str = ""
    required: bool = False


@dataclass(frozen=True)
class Op:
    """What the document says of one route beyond its method, path and stream-ness, which
    the one route declaration (common/wire/routes.py) gives, found by its `handler`."""

    handler: str  # "<group>.<method>", as the route declaration names it
    summary: str
    status: int = 200
    answer: Schema | None = None  # JSON answer; None with `media` for streams and files
    media: str = JSON
    body: Schema | None = None
    body_required: bool = True
    params: tuple[Param, ...] = ()
    errors: tuple[int, ...] = ()  # beyond the shared ones
    extra: dict[int, Schema] = field(default_factory=dict)  # other success/answer shapes
    # Path parameters this answer supplies: {"session_id": "id"} links the body's `id` to
    # every operation with `{session_id}` in its path (OpenAPI links; fuzzers follow them).
    gives: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # A route that always streams says so in the declaration, and only there.
        if self.route.stream is True:
            object.__setattr__(self, "media", SSE)

    @property
    def route(self) -> Route:
        """The declared route (a KeyError names a handler the declaration lacks)."""
        return by_handler()[self.handler]

    @property
    def method(self) -> str:
        return self.route.method

    @property
    def path(self) -> str:
        return self.route.path

    @property
    def full_path(self) -> str:
        return self.route.full_path


PAGING = (Param("after", {"type": "string", "pattern": "^[0-9]{1,12}$"},
                 description="the `next_after` of the previous page"),
           Param("limit", {"type": "string", "pattern": "^([1-9][0-9]{0,2}|1000)$"},
                 description="page size, 1 to 1000 (default 100)"))

FLAG: Schema = {"type": "string", "enum": ["1", "true", "0", "false"]}
SEARCH_PARAMS = (
    Param("q", {"type": "string", "maxLength": 500},
          description="words (all must match), \"a phrase\", or word* (a prefix)"),
    Param("status", {"type": "string", "enum": [s.value for s in RunStatus]},
          description="runs with this status (repeat for any of several)"),
    Param("reason", {"type": "string", "minLength": 1, "maxLength": 200},
          description="runs that ended for this reason (repeat for any of several)"),
    Param("labelled", FLAG, description="1: only runs with a label"),
    Param("evaluator_failed", FLAG, description="1: only runs an evaluator failed"),
    Param("session", {"type": "string", "minLength": 1, "maxLength": 200},
          description="only this session's runs"),
    PAGING[0],
    Param("limit", {"type": "string", "pattern": "^([1-9][0-9]{0,2}|1000)$"},
          description="page size, 1 to 1000 (default 50)"))

OPERATIONS: tuple[Op, ...] = (
    Op("runs.health", "Daemon health: pid, version, database, Host, active run",
       answer=ref("Health")),
    Op("openapi.openapi_json", "This document", answer=ref("OpenApiDocument")),
    # sessions and runs
    Op("runs.list_sessions",
       "List sessions (oldest first, or newest first with ?order=newest; paged)",
       answer=ref("SessionList"), params=(
           *PAGING, Param("order", {"type": "string", "enum": ["oldest", "newest"]},
                          description="oldest first (the default) or newest first")),
       errors=(400,)),
    Op("runs.create_session", "Create a session", 201, ref("Session"),
       body=ref("SessionCreate"), body_required=False, errors=(400,),
       gives={"session_id": "id"}),
    Op("data.delete_all", "Delete all history", answer=ref("HistoryDeleted"),
       errors=(409,)),
    Op("runs.get_session", "One session", answer=ref("Session"),
       errors=(404,)),
    Op("edits.patch_session", "Change a session's title and/or metadata",
       answer=ref("Session"), body=ref("SessionPatch"), errors=(400,)),
    Op("data.delete_session", "Delete a session, its runs and unused blobs",
       answer=ref("SessionDeleted"), errors=(409,)),
    Op("runs.list_runs",
       "List a session's runs (oldest first, or newest first with ?order=newest; paged)",
       answer=ref("RunList"), params=(
           *PAGING, Param("order", {"type": "string", "enum": ["oldest", "newest"]},
                          description="oldest first (the default) or newest first")),
       errors=(400, 404)),
    Op("runs.create_run", "Start a run in the background", 202,
       ref("RunAccepted"), body=ref("RunRequest"), errors=(400, 409),
       gives={"run_id": "run_id"}),
    Op("runs.get_run", "A run", answer=ref("Run")),
    Op("edits.patch_run", "Label or annotate a run (never its status or output)",
       answer=ref("Run"), body=ref("RunPatch"), errors=(400,)),
    Op("edits.get_lineage", "The chain of resumes and the tree of reruns",
       answer=ref("Lineage")),
    Op("runs.cancel_run", "Cancel the active run", answer=ref("RunAccepted"),
       errors=(409,)),
    Op("runs.resume_run", "Answer a run that asked for input", 202,
       ref("RunAccepted"), body=ref("RunRequest"), errors=(400, 409)),
    Op("runs.rerun_run",
       "Run the stored input again in a new context; a body replaces what it gives",
       202,
       ref("RunAccepted"), body=ref("RerunRequest"), body_required=False, errors=(400, 409)),
    Op("runs.run_events", "The run's events as SSE (replay, then live); 204 "
       "when the run is over and nothing is after the cursor", errors=(400,),
       extra={204: {}},
       params=(Param("after", DIGITS, description="replay events after this seq"),
               Param("Last-Event-ID", HEADER_CURSOR, "header"))),
    Op("runs.part_content",
       "One part of a run's input or output, whole (a cut part's `content_url`): a long "
       "text as text/plain, a file as an attachment; Range requests answer 206",
       media="*/*", errors=(400,), extra={206: {}, 416: {}},
       params=(Param("side", {"type": "string", "enum": ["input", "output"]}, "path",
                     required=True),
               Param("index", {"type": "string", "pattern": "^[0-9]{1,6}$"}, "path",
                     required=True))),
    Op("introspect.run_snippets", "Copy curl / Copy Python of the run's A2A request",
       answer=ref("Snippets")),
    # data
    Op("data.get_file", "A stored file, as an attachment", media="*/*"),
    Op("search.search", "Find runs by words and filters (newest first, paged)",
       answer=ref("SearchResults"), errors=(400,), params=SEARCH_PARAMS),
    Op("data.compare", "Compare two runs", answer=ref("Compare"), errors=(400, 404),
       params=(Param("left", NONEMPTY, required=True),
               Param("right", NONEMPTY, required=True))),
    Op("data.export", "Export sessions/runs as a bundle", answer=ref("Bundle"),
       body=ref("ExportRequest"), body_required=False, errors=(400, 404)),
    Op("data.import_", "Import a bundle (validated before any write)", 201,
       ref("BundleImported"), body=ref("Bundle"), errors=(400, 409)),
    Op("upkeep.report", "History's size and counts, and what the retention policy "
       "would remove", answer=ref("HistoryReport")),
    Op("upkeep.trim", "Apply the retention policy now", answer=ref("HistoryTrimmed")),
    # introspection
    Op("introspect.composer_schema", "The input composer of the project",
       answer=ref("ComposerSchema")),
    Op("introspect.source_target", "File, line and column of a Flow node",
       answer=ref("SourceTarget"), errors=(422,)),
    # Host
    Op("host.host_status", "Host state", answer=ref("HostStatus")),
    Op("host.host_start", "Start the Host", answer=ref("HostStatus"), extra={
        503: ref("HostError")}),
    Op("host.host_stop", "Stop the Host", answer=ref("HostStatus"), errors=(409,)),
    Op("host.host_restart", "Restart the Host", answer=ref("HostStatus"), errors=(409,),
       extra={503: ref("HostError")}),
    Op("host.host_logs", "The Host's output (`follow=1`: as SSE, never ends)",
       answer=ref("HostLogs"), errors=(400,),
       params=(Param("after", {"type": "string", "pattern": "^[0-9]{1,12}$"}),
               Param("limit", {"type": "string",
                                        "pattern": "^([1-9][0-9]{0,2}|[1-4][0-9]{3}|5000)$"}),
               Param("follow", {"enum": ["0", "1", "true", "false"]}),
               Param("Last-Event-ID", HEADER_CURSOR, "header",
                     description="with follow=1: resume after this line offset"))),
    Op("host.project_events", "Project-wide events as SSE (Host state, active run); never ends"),
    # suites
    Op("suites.create", "Create a suite (inputs and baselines copied now)", 201,
       ref("Suite"), body=ref("SuiteCreate"), errors=(400, 409), gives={"suite_id": "id"}),
    Op("suites.list_suites", "List suites", answer=ref("SuiteList")),
    Op("suites.get", "A suite with its cases", answer=ref("Suite")),
    Op("suites.patch", "Rename, run on save, or make a suite run's results the baselines",
       answer=ref("Suite"), body=ref("SuitePatch"), errors=(400, 409)),
    Op("suites.delete", "Delete a suite, its runs' reports and unused blobs",
       answer=ref("SuiteDeleted"), errors=(409,)),
    Op("suites.start", "Run every case, one at a time, in the background",
       202, ref("SuiteRunAccepted"), body=ref("SuiteStart"), body_required=False,
       errors=(400, 409), gives={"suite_run_id": "suite_run_id"}),
    Op("suites.save", "Save the suite as a file in the project",
       answer=ref("SuiteFileSaved"), body=ref("SuiteSave"), body_required=False,
       errors=(400,)),
    Op("suites.runs", "A suite's runs, newest first",
       answer=ref("SuiteRunList")),
    Op("suites.report", "A suite run's report (counts, no verdict)",
       answer=ref("SuiteRun")),
    Op("suites.cancel", "Cancel a suite run (the rest is skipped)",
       answer=ref("SuiteRunAccepted"), errors=(409,)),
    Op("suites.events", "A suite run's progress as SSE (replay, "
       "then live); 204 when it is over and nothing is after the cursor",
       errors=(400,), extra={204: {}},
       params=(Param("after", DIGITS, description="replay events after this seq"),
               Param("Last-Event-ID", HEADER_CURSOR, "header"))),
    Op("suites.case", "One case of a suite run: its baseline and result compared in full",
       answer=ref("SuiteCaseCompare"), errors=(409,)),
)

# Routes only the front serves (the daemon never sees them).
FRONT_OPERATIONS: tuple[Op, ...] = (
    Op("front.landing", "Front landing; `?token=` sets the auth cookie and redirects here",
       answer=ref("Landing"), params=(Param("token", STR),), extra={303: {}}),
)



def _documented(ops: tuple[Op, ...]) -> None:
    """Every public route declared has its one `Op`, and every `Op` a declared route."""
    declared = sorted(r.handler for r in ROUTES if r.public)
    named = sorted(op.handler for op in ops)
    if named != declared:
        raise LookupError("daemon/http/openapi.py and common/wire/routes.py disagree: "
                          f"undocumented {sorted(set(declared) - set(named))}, "
                          f"undeclared or twice {sorted(set(named) - set(declared))}")


_documented((*OPERATIONS, *FRONT_OPERATIONS))

ERROR_TEXT = {
    400: "Bad request (`detail.error` says which rule)",
    401: "Missing or wrong token (front)",
    403: "Host, Origin or Sec-Fetch-Site refused (front), or a foreign socket peer",
    404: "No such resource",
    409: "The current state forbids it (e.g. `active_run_conflict`)",
    413: "Body larger than this route allows",
    415: "State-changing requests must be `Content-Type: application/json` (front)",
    422: "The project cannot be read",
    500: "A bug; the log says more",
    503: "The daemon (or the Host) is not available",
}
SHARED_ERRORS = (401, 403, 500, 503)
BODY_ERRORS = (413, 415)
STATE_CHANGING = {"POST", "PUT", "PATCH", "DELETE"}


def _parameters(op: Op) -> list[dict[str, Any]]:
    # A path parameter is a string unless the operation declares it (a `where="path"` Param).
    declared = {p.name for p in op.params if p.where == "path"}
    params = [{"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
              for name in re.findall(r"{(\w+)}", op.path) if name not in declared]
    for p in op.params:
        entry: dict[str, Any] = {"name": p.name, "in": p.where, "required": p.required,
                                 "schema": p.schema}
        if p.description:
            entry["description"] = p.description
        params.append(entry)
    return params


def _error(status: int, schema: Schema | None = None) -> dict[str, Any]:
    return {"description": ERROR_TEXT.get(status, "Error"),
            "content": {JSON: {"schema": schema or ref("Error")}}}


def _operation_id(op: Op) -> str:
    return re.sub(r"\W+", "_", f"{op.method.lower()}{op.full_path}").strip("_")


def _links(op: Op, ops: tuple[Op, ...]) -> dict[str, Any]:
    return {f"{param}_to_{_operation_id(target)}": {
                "operationId": _operation_id(target),
                "parameters": {param: f"$response.body#/{field_name}"}}
            for param, field_name in op.gives.items()
            for target in ops if "{" + param + "}" in target.path}


def _operation(op: Op, ops: tuple[Op, ...]) -> dict[str, Any]:
    success: dict[str, Any] = {"description": op.summary}
    if op.gives:
        success["links"] = _links(op, ops)
    if op.answer is not None:
        success["content"] = {op.media: {"schema": op.answer}}
    elif op.media == SSE:  # the schema of one event, as a client parses it
        success["content"] = {SSE: {"schema": SSE_EVENT}}
    elif op.media == "*/*":  # a part or a file as stored: a data part's JSON is any JSON
        success["content"] = {"application/json": {"schema": {}},
                              "*/*": {"schema": {"type": "string", "format": "binary"}}}
    elif op.media != JSON:
        success["content"] = {op.media: {"schema": {"type": "string"}}}
    responses: dict[str, Any] = {str(op.status): success}
    codes = set(SHARED_ERRORS) | set(op.errors)
    if op.method in STATE_CHANGING:
        codes |= set(BODY_ERRORS)
    if "{" in op.path:
        codes.add(404)
    for status in sorted(codes):
        responses[str(status)] = _error(status)
    for status, schema in op.extra.items():
        responses[str(status)] = (_error(status, schema) if status >= 400 else
                                  {"description": "See the summary"})
    doc: dict[str, Any] = {
        "operationId": _operation_id(op),
        "summary": op.summary, "tags": [_tag(op)], "responses": responses}
    params = _parameters(op)
    if params:
        doc["parameters"] = params
    if op.body is not None:
        doc["requestBody"] = {"required": op.body_required,
                              "content": {JSON: {"schema": op.body}}}
    return doc


def _tag(op: Op) -> str:
    first = op.full_path.removeprefix(PREFIX).strip("/").split("/")[0]
    return first or "front"


@cache
def build_document() -> dict[str, Any]:
    paths: dict[str, dict[str, Any]] = {}
    ops = (*OPERATIONS, *FRONT_OPERATIONS)
    for op in ops:
        paths.setdefault(op.full_path, {})[op.method.lower()] = _operation(op, ops)
    return {
        "openapi": "3.1.0",
        "info": {"title": "llamon Playground API", "version": __version__,
                 "description": "Served by the front on loopback; every route needs the "
                                "token (Bearer header or the cookie set by `/?token=`)."},
        "servers": [{"url": "/"}],
        "security": [{"bearer": []}, {"cookie": []}],
        "paths": paths,
        "components": {
            "schemas": SCHEMAS,
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer"},
                "cookie": {"type": "apiKey", "in": "cookie",
                           "name": "llamon-playground-PORT-PROJECT",
                           "description": "set by opening `/?token=...`; PORT is the front's, "
                                          "PROJECT the project's key"},
            },
        },
    }


async def openapi_json(request: web.Request) -> web.Response:
    return json_response(build_document())


def add_openapi_routes(app: web.Application) -> None:
    """Route the OpenAPI document."""
    bind(app, "openapi", SimpleNamespace(openapi_json=openapi_json))
