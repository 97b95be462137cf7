"""JSON Schemas (OpenAPI 3.1 dialect) of the Playground API's bodies and answers.

What every answer is sure to hold is `required`; everything else is described but optional,
and objects stay open (clients ignore unknown keys; the API only ever adds keys).
"""

from __future__ import annotations

from typing import Any

from llamon_playground.common.contract import RunStatus

Schema = dict[str, Any]

STR: Schema = {"type": "string"}
INT: Schema = {"type": "integer"}
NUM: Schema = {"type": "number"}
BOOL: Schema = {"type": "boolean"}
OBJ: Schema = {"type": "object"}
ANY: Schema = {}


def ref(name: str) -> Schema:
    return {"$ref": f"#/components/schemas/{name}"}


def nullable(schema: Schema) -> Schema:
    return {"anyOf": [schema, {"type": "null"}]}


def arr(items: Schema, **extra: Any) -> Schema:
    return {"type": "array", "items": items, **extra}


def obj(required: tuple[str, ...] = (), closed: bool = False, **props: Schema) -> Schema:
    schema: Schema = {"type": "object", "properties": props}
    if required:
        schema["required"] = list(required)
    if closed:
        schema["additionalProperties"] = False
    return schema


RUN_STATUSES = [status.value for status in RunStatus]
NONEMPTY = {"type": "string", "minLength": 1}
# Standard base64 with its padding, as the daemon decodes it (validate=True).
BASE64 = {"type": "string",
          "pattern": "^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$"}
# A relative path inside the project: not absolute, no backslash or NUL (`..` segments and
# links out are refused too, which a pattern cannot say).
CHANGED_FILE = {"type": "string", "minLength": 1, "pattern": "^[^/\\\\\u0000][^\\\\\u0000]*$"}

SCHEMAS: dict[str, Schema] = {
    "Error": obj(("detail",), detail=obj(("error", "message"), error=STR, message=STR)),
    # -- parts and requests
    "InputPart": {"type": "object", "required": ["kind"], "oneOf": [
        obj(("kind", "text"), closed=True, kind={"const": "text"}, text=STR),
        obj(("kind", "data"), closed=True, kind={"const": "data"}, data=OBJ),
        obj(("kind", "bytes_base64"), closed=True, kind={"const": "file"}, bytes_base64=BASE64,
            name=STR, mime=STR),
        obj(("kind", "uri"), closed=True, kind={"const": "file"},
            uri={"type": "string", "minLength": 1}, name=STR, mime=STR),
    ]},
    "Part": obj(("kind",), kind=STR, text=STR, data=ANY, sha256=nullable(STR),
                size=nullable(INT), name=nullable(STR), mime=nullable(STR),
                source=nullable(STR), uri=STR, availability=STR, replay=STR, status=STR,
                reason=nullable(STR), message=STR, code=nullable(STR)),
    "RunRequest": obj(("parts",), closed=True,
                      parts=arr(ref("InputPart"), minItems=1, maxItems=256),
                      metadata=nullable(OBJ),
                      changed_files=nullable(arr(CHANGED_FILE, maxItems=1000)),
                      revision=nullable({"type": "string", "maxLength": 256})),
    # Each given field replaces the stored one (validated as for a new run); none: a clone.
    "RerunRequest": obj(closed=True, parts=arr(ref("InputPart"), minItems=1, maxItems=256),
                        metadata=nullable(OBJ),
                        changed_files=nullable(arr(CHANGED_FILE, maxItems=1000)),
                        revision=nullable({"type": "string", "maxLength": 256}),
                        label=nullable({"type": "string", "maxLength": 200})),
    "SessionPatch": obj(closed=True, title={"type": "string", "maxLength": 500}, metadata=OBJ),
    "RunPatch": obj(closed=True, label=nullable({"type": "string", "maxLength": 200}),
                    note=nullable({"type": "string", "maxLength": 10000})),
    "SessionCreate": obj(closed=True, title={"type": "string", "maxLength": 500},
                         metadata=nullable(OBJ)),
    "ExportRequest": obj(closed=True, session_ids=nullable(arr(STR)),
                         run_ids=nullable(arr(STR))),
    # -- answers
    "Session": obj(("id", "title", "context_id", "created_at", "metadata"), id=STR, title=STR,
                   context_id=STR, created_at=STR, metadata=OBJ, run_count=INT),
    "SessionList": obj(("sessions", "next_after"), sessions=arr(ref("Session")),
                       next_after=nullable(STR)),
    "Run": obj(("id", "session_id", "status", "created_at", "context_id", "input", "output",
                "scores"),
               id=STR, session_id=STR, status={"enum": RUN_STATUSES}, reason=nullable(STR),
               created_at=STR, started_at=nullable(STR), ended_at=nullable(STR),
               duration_ms=nullable(NUM), context_id=STR, task_id=nullable(STR),
               parent_run_id=nullable(STR), rerun_of=nullable(STR), resumed_by=nullable(STR),
               input=obj(("parts",), parts=arr(ref("Part"))), output=arr(ref("Part")),
               error=nullable(OBJ), scores=arr(OBJ), generation=nullable(INT),
               recommended_run_command=nullable(STR), label=nullable(STR),
               note=nullable(STR), edited=BOOL, edited_fields=arr(STR),
               code_fingerprint=nullable(STR), a2a_version=nullable(STR),
               score_summary=obj(evaluators=INT, failed=INT)),
    "RunSummary": obj(("id", "status"), id=STR, session_id=STR, status={"enum": RUN_STATUSES},
                      reason=nullable(STR), created_at=STR, label=nullable(STR),
                      generation=nullable(INT), code_fingerprint=nullable(STR),
                      parent_run_id=nullable(STR), rerun_of=nullable(STR),
                      resumed_by=nullable(STR), edited=BOOL, edited_fields=arr(STR)),
    "RerunTree": obj(("run", "reruns"), run=ref("RunSummary"), reruns=arr(ref("RerunTree"))),
    "Lineage": obj(("run_id", "resumes", "reruns", "truncated"), run_id=STR,
                   resumes=arr(ref("RunSummary")), reruns=ref("RerunTree"), truncated=BOOL),
    "RunList": obj(("runs", "next_after"), runs=arr(ref("Run")), next_after=nullable(STR)),
    "RunAccepted": obj(("run_id", "status"), run_id=STR, status={"enum": RUN_STATUSES}),
    "SessionDeleted": obj(("deleted", "blobs_removed"), deleted=STR, blobs_removed=INT),
    "HistoryDeleted": obj(("deleted", "blobs_removed"),
                          deleted=obj(sessions=INT, runs=INT, events=INT), blobs_removed=INT),
    "HostStatus": obj(("state",), state=STR, generation=nullable(INT), pid=nullable(INT),
                      url=nullable(STR), started_at=nullable(NUM), ready_at=nullable(NUM),
                      restarts=INT, crashes=INT, last_exit_code=nullable(INT),
                      last_stop_step=nullable(STR), backoff_until=nullable(NUM),
                      start_mode=nullable({"enum": ["warm", "cold"]}),
                      start_reason=nullable(STR),
                      warm_parent=nullable(obj(("pid",), pid=INT, python=STR, preloaded=INT,
                                               failed=INT)),
                      warnings=arr(ANY), watch=obj(batches=INT, restarts=INT),
                      reaped=arr(obj(("pid", "when"), pid=INT, cmdline=arr(STR), when=STR,
                                     at=NUM))),
    "HostError": obj(("detail",), detail=obj(("error", "message"), error=STR, message=STR,
                                             log_tail=ANY)),
    "HostLogs": obj(("lines", "overflow", "next"), overflow=BOOL, next=INT,
                    lines=arr(obj(("offset", "text"), offset=INT, time=NUM,
                                  generation=nullable(INT), stream=STR, text=STR))),
    "Health": obj(("status", "version", "pid", "project", "database", "host"),
                  status={"const": "ok"}, version=STR, pid=INT, project=STR, database=STR,
                  host=ref("HostStatus"), active_run_id=nullable(STR),
                  history_degraded=ANY,
                  history=obj(("bytes",), bytes=INT, max_bytes=nullable(INT),
                              max_age_days=nullable(NUM))),
    "HistoryReport": obj(("policy", "bytes", "counts", "plan"), policy=OBJ, bytes=OBJ,
                         counts=OBJ, incremental_vacuum=BOOL,
                         plan=obj(("sessions", "runs", "bytes"), sessions=arr(STR), runs=INT,
                                  bytes=INT, used_bytes=INT)),
    "HistoryTrimmed": obj(("removed", "blobs_removed"), removed=OBJ, blobs_removed=INT,
                          bytes_before=INT, bytes_after=INT),
    "Compare": obj(("left", "right", "automatic_verdict"), left=OBJ, right=OBJ,
                   duration_delta_ms=nullable(NUM), same_code=nullable(BOOL), text=OBJ,
                   data=OBJ, files=arr(OBJ),
                   scores=ANY, input=OBJ, automatic_verdict={"type": "null"}),
    "Bundle": obj(("format",), format={"const": "llamon.playground.bundle/1"},
                  exported_at=nullable(STR), privacy_warning=nullable(STR), sessions=arr(OBJ),
                  runs=arr(OBJ),
                  events=arr(OBJ),
                  blobs={"type": "object", "additionalProperties": obj(
                      ("bytes_base64", "size"), closed=True, bytes_base64=BASE64,
                      size={"type": "integer", "minimum": 0})}),
    "BundleImported": obj(("sessions", "runs"), sessions=OBJ, runs=OBJ),
    "ComposerSchema": obj(("mode", "tabs"), kind=nullable(STR), mode={"enum": ["data", "text"]},
                          host_ready=BOOL, tabs=arr(OBJ), text=nullable(OBJ),
                          diagnostics=arr(OBJ)),
    "SourceTarget": obj(("node_id", "file", "line", "column"), node_id=STR, file=STR,
                        function=nullable(STR), qualname=nullable(STR), line=INT, column=INT,
                        end_line=INT, end_column=INT),
    "Snippets": obj(("run_id",), run_id=STR, host_ready=BOOL),
    "Landing": obj(("service", "api", "openapi"), service=STR, api=STR, openapi=STR),
    "OpenApiDocument": obj(("openapi", "paths"), openapi=STR, paths=OBJ),
}
