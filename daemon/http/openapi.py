"""The OpenAPI 3.1 document of the public Playground API, and its route.

One `Op` per route: adding a route to the daemon means adding one line to `OPERATIONS` (a
test compares this table with the daemon's router, so a forgotten route fails). Path
parameters, the error answers every route shares (the front's 401/403/413/415/503, the
daemon's 500) and the security schemes are filled in by `build_document`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from aiohttp import web

from llamon_playground import __version__
from llamon_playground.common.contract import API_PREFIX, RunStatus
from llamon_playground.common.http_json import json_response
from llamon_playground.daemon.http.openapi_schemas import NONEMPTY, SCHEMAS, STR, Schema, ref

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
    """One route of the public API, declared once; the OpenAPI document is built from these."""

    method: str
    path: str  # under PREFIX, unless it starts with "//" (then it is served at the root)
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

    @property
    def full_path(self) -> str:
        return self.path[1:] if self.path.startswith("//") else PREFIX + self.path


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
    Op("GET", "//health", "Daemon health: pid, version, database, Host, active run",
       answer=ref("Health")),
    Op("GET", "/openapi.json", "This document", answer=ref("OpenApiDocument")),
    # sessions and runs
    Op("GET", "/sessions",
       "List sessions (oldest first, or newest first with ?order=newest; paged)",
       answer=ref("SessionList"), params=PAGING + (
           Param("order", {"type": "string", "enum": ["oldest", "newest"]},
                 description="oldest first (the default) or newest first"),),
       errors=(400,)),
    Op("POST", "/sessions", "Create a session", 201, ref("Session"),
       body=ref("SessionCreate"), body_required=False, errors=(400,),
       gives={"session_id": "id"}),
    Op("DELETE", "/sessions", "Delete all history", answer=ref("HistoryDeleted"),
       errors=(409,)),
    Op("GET", "/sessions/{session_id}", "One session", answer=ref("Session"),
       errors=(404,)),
    Op("PATCH", "/sessions/{session_id}", "Change a session's title and/or metadata",
       answer=ref("Session"), body=ref("SessionPatch"), errors=(400,)),
    Op("DELETE", "/sessions/{session_id}", "Delete a session, its runs and unused blobs",
       answer=ref("SessionDeleted"), errors=(409,)),
    Op("GET", "/sessions/{session_id}/runs",
       "List a session's runs (oldest first, or newest first with ?order=newest; paged)",
       answer=ref("RunList"), params=PAGING + (
           Param("order", {"type": "string", "enum": ["oldest", "newest"]},
                 description="oldest first (the default) or newest first"),),
       errors=(400, 404)),
    Op("POST", "/sessions/{session_id}/runs", "Start a run in the background", 202,
       ref("RunAccepted"), body=ref("RunRequest"), errors=(400, 409),
       gives={"run_id": "run_id"}),
    Op("GET", "/runs/{run_id}", "A run", answer=ref("Run")),
    Op("PATCH", "/runs/{run_id}", "Label or annotate a run (never its status or output)",
       answer=ref("Run"), body=ref("RunPatch"), errors=(400,)),
    Op("GET", "/runs/{run_id}/lineage", "The chain of resumes and the tree of reruns",
       answer=ref("Lineage")),
    Op("DELETE", "/runs/{run_id}", "Cancel the active run", answer=ref("RunAccepted"),
       errors=(409,)),
    Op("POST", "/runs/{run_id}/resume", "Answer a run that asked for input", 202,
       ref("RunAccepted"), body=ref("RunRequest"), errors=(400, 409)),
    Op("POST", "/runs/{run_id}/rerun",
       "Run the stored input again in a new context; a body replaces what it gives",
       202,
       ref("RunAccepted"), body=ref("RerunRequest"), body_required=False, errors=(400, 409)),
    Op("GET", "/runs/{run_id}/events", "The run's events as SSE (replay, then live); 204 "
       "when the run is over and nothing is after the cursor", media=SSE, errors=(400,),
       extra={204: {}},
       params=(Param("after", DIGITS, description="replay events after this seq"),
               Param("Last-Event-ID", HEADER_CURSOR, "header"))),
    Op("GET", "/runs/{run_id}/{side}/{index}/content",
       "One part of a run's input or output, whole (a cut part's `content_url`): a long "
       "text as text/plain, a file as an attachment; Range requests answer 206",
       media="*/*", errors=(400,), extra={206: {}, 416: {}},
       params=(Param("side", {"type": "string", "enum": ["input", "output"]}, "path",
                     required=True),
               Param("index", {"type": "string", "pattern": "^[0-9]{1,6}$"}, "path",
                     required=True))),
    Op("GET", "/runs/{run_id}/snippets", "Copy curl / Copy Python of the run's A2A request",
       answer=ref("Snippets")),
    # data
    Op("GET", "/files/{sha256}", "A stored file, as an attachment", media="*/*"),
    Op("GET", "/search", "Find runs by words and filters (newest first, paged)",
       answer=ref("SearchResults"), errors=(400,), params=SEARCH_PARAMS),
    Op("GET", "/compare", "Compare two runs", answer=ref("Compare"), errors=(400, 404),
       params=(Param("left", NONEMPTY, required=True),
               Param("right", NONEMPTY, required=True))),
    Op("POST", "/bundles/export", "Export sessions/runs as a bundle", answer=ref("Bundle"),
       body=ref("ExportRequest"), body_required=False, errors=(400, 404)),
    Op("POST", "/bundles/import", "Import a bundle (validated before any write)", 201,
       ref("BundleImported"), body=ref("Bundle"), errors=(400, 409)),
    Op("GET", "/history", "History's size and counts, and what the retention policy "
       "would remove", answer=ref("HistoryReport")),
    Op("POST", "/history/trim", "Apply the retention policy now", answer=ref("HistoryTrimmed")),
    # introspection
    Op("GET", "/composer-schema", "The input composer of the project",
       answer=ref("ComposerSchema")),
    Op("GET", "/source-targets/{node_id}", "File, line and column of a Flow node",
       answer=ref("SourceTarget"), errors=(422,)),
    # Host
    Op("GET", "/host", "Host state", answer=ref("HostStatus")),
    Op("POST", "/host/start", "Start the Host", answer=ref("HostStatus"), extra={
        503: ref("HostError")}),
    Op("POST", "/host/stop", "Stop the Host", answer=ref("HostStatus"), errors=(409,)),
    Op("POST", "/host/restart", "Restart the Host", answer=ref("HostStatus"), errors=(409,),
       extra={503: ref("HostError")}),
    Op("GET", "/host/logs", "The Host's output (`follow=1`: as SSE, never ends)",
       answer=ref("HostLogs"), errors=(400,),
       params=(Param("after", {"type": "string", "pattern": "^[0-9]{1,12}$"}),
               Param("limit", {"type": "string",
                                        "pattern": "^([1-9][0-9]{0,2}|[1-4][0-9]{3}|5000)$"}),
               Param("follow", {"enum": ["0", "1", "true", "false"]}),
               Param("Last-Event-ID", HEADER_CURSOR, "header",
                     description="with follow=1: resume after this line offset"))),
    Op("GET", "/events", "Project-wide events as SSE (Host state, active run); never ends",
       media=SSE),
    # suites
    Op("POST", "/suites", "Create a suite (inputs and baselines copied now)", 201,
       ref("Suite"), body=ref("SuiteCreate"), errors=(400, 409), gives={"suite_id": "id"}),
    Op("GET", "/suites", "List suites", answer=ref("SuiteList")),
    Op("GET", "/suites/{suite_id}", "A suite with its cases", answer=ref("Suite")),
    Op("PATCH", "/suites/{suite_id}",
       "Rename, run on save, or make a suite run's results the baselines",
       answer=ref("Suite"), body=ref("SuitePatch"), errors=(400, 409)),
    Op("DELETE", "/suites/{suite_id}", "Delete a suite, its runs' reports and unused blobs",
       answer=ref("SuiteDeleted"), errors=(409,)),
    Op("POST", "/suites/{suite_id}/runs", "Run every case, one at a time, in the background",
       202, ref("SuiteRunAccepted"), body=ref("SuiteStart"), body_required=False,
       errors=(400, 409), gives={"suite_run_id": "suite_run_id"}),
    Op("POST", "/suites/{suite_id}/file", "Save the suite as a file in the project",
       answer=ref("SuiteFileSaved"), body=ref("SuiteSave"), body_required=False,
       errors=(400,)),
    Op("GET", "/suites/{suite_id}/runs", "A suite's runs, newest first",
       answer=ref("SuiteRunList")),
    Op("GET", "/suite-runs/{suite_run_id}", "A suite run's report (counts, no verdict)",
       answer=ref("SuiteRun")),
    Op("DELETE", "/suite-runs/{suite_run_id}", "Cancel a suite run (the rest is skipped)",
       answer=ref("SuiteRunAccepted"), errors=(409,)),
    Op("GET", "/suite-runs/{suite_run_id}/events", "A suite run's progress as SSE (replay, "
       "then live); 204 when it is over and nothing is after the cursor", media=SSE,
       errors=(400,), extra={204: {}},
       params=(Param("after", DIGITS, description="replay events after this seq"),
               Param("Last-Event-ID", HEADER_CURSOR, "header"))),
    Op("GET", "/suite-runs/{suite_run_id}/cases/{case_id}",
       "One case of a suite run: its baseline and result compared in full",
       answer=ref("SuiteCaseCompare"), errors=(409,)),
)

# Routes only the front serves (the daemon never sees them).
FRONT_OPERATIONS: tuple[Op, ...] = (
    Op("GET", "//", "Front landing; `?token=` sets the auth cookie and redirects here",
       answer=ref("Landing"), params=(Param("token", STR),), extra={303: {}}),
)

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
    app.router.add_get(PREFIX + "/openapi.json", openapi_json)
