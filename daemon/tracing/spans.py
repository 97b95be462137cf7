"""A stored run as span descriptions: a pure function of its row and the few events a trace
needs (its phases, its Host's NodeTracer events and evaluator results), so a run exported
as it ends and the same run back-filled later give the same spans.

The tree follows the OpenTelemetry GenAI conventions: the run is an `invoke_agent` CLIENT
span (under its suite run's span when it has one), each phase a child with its own start
and end, each NodeTracer node a child (nested under the node that was open when it
started), and each evaluator result a `gen_ai.evaluation.result` event on its node's span
or the run's. Inputs and outputs are attributes only when content capture is on, redacted
as history redacts metadata; file bytes never are.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import orjson

from llamon_playground.daemon.data.redact import redact
from llamon_playground.daemon.tracing import ids

NS = 1_000_000_000
PREFIX = "llamon.playground."
# Phase detail fields that say something in one value (log tails and file lists do not).
PHASE_FIELDS = ("generation", "task_state", "status", "reason", "message", "revision", "detail",
                "file", "line")
TEXT_CAP = 4096  # one attribute's text (a message, an explanation): its head only
ERROR_STATUSES = frozenset({"failed", "interrupted"})

AttrValue = str | bool | int | float


@dataclass(frozen=True, slots=True)
class StoredEvent:
    """One event of a run as a trace needs it: its kind, when history committed it, and its
    fields."""

    kind: str
    ts_ns: int
    data: dict[str, Any]


@dataclass(slots=True)
class SpanEvent:
    """An event on a span (an evaluator's result), at its own time."""

    name: str
    ts_ns: int
    attributes: dict[str, AttrValue]


@dataclass(frozen=True, slots=True)
class SpanLink:
    """A link to another run's span (the run a resume answers, a rerun's source)."""

    trace_id: int
    span_id: int
    attributes: dict[str, AttrValue]


@dataclass(slots=True)
class SpanDesc:
    """One span to export, with its own ids and times. `parent_id` None: a root;
    `remote_parent`: the parent is exported apart (a suite run's span)."""

    name: str
    trace_id: int
    span_id: int
    parent_id: int | None
    start_ns: int
    end_ns: int
    kind: str = "internal"  # or "client"
    attributes: dict[str, AttrValue] = field(default_factory=dict)
    events: list[SpanEvent] = field(default_factory=list)
    links: list[SpanLink] = field(default_factory=list)
    status: str = "unset"  # "ok" | "error" | "unset"
    status_message: str | None = None
    remote_parent: bool = False


def parse_time(value: str | None) -> int | None:
    """History's time (`2026-12-04T13:00:00.123Z`) in Unix nanoseconds."""
    if not value:
        return None
    return int(datetime.fromisoformat(value).timestamp() * 1000) * 1_000_000


def _host_time(value: Any, fallback: int) -> int:
    """A capture event's `ts` (Unix seconds, the Host's clock) in nanoseconds."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
        return round(value * 1_000_000) * 1000  # a float's seconds hold microseconds
    return fallback


def _text(value: Any) -> str:
    text = value if isinstance(value, str) else orjson.dumps(value).decode()
    return text if len(text) <= TEXT_CAP else text[:TEXT_CAP] + "…"


def _put(attrs: dict[str, AttrValue], key: str, value: Any) -> None:
    if value is None or value == "":
        return
    if isinstance(value, (bool, int, float)):
        attrs[key] = value
    else:
        attrs[key] = _text(value)


@dataclass(frozen=True)
class RunTraceInput:
    """What a run's trace is built from: its stored row (as `GET /runs/{id}` answers it),
    its phase, trace and status events in order, the agent's name, and the suite run of
    each run it links to (their traces are theirs)."""

    run: dict[str, Any]
    events: list[StoredEvent]
    agent_name: str
    linked_suites: dict[str, str | None] = field(default_factory=dict)


def run_spans(source: RunTraceInput, *, capture_content: bool = False) -> list[SpanDesc]:
    """The run's spans, parents before children: the `invoke_agent` span first."""
    run = source.run
    run_id: str = run["id"]
    suite_run_id = run.get("suite_run_id")
    trace = ids.trace_id(run_id, suite_run_id)
    # The row's times, widened to its events' commit times (the ending's events commit a
    # moment after the row's `ended_at` was taken).
    times = [e.ts_ns for e in source.events]
    start = min([t for t in (parse_time(run.get("created_at")),) if t] + times[:1] or [0])
    end = max([t for t in (parse_time(run.get("ended_at")),) if t] + times[-1:] + [start])
    root = SpanDesc(f"invoke_agent {source.agent_name}", trace, ids.run_span_id(run_id),
                    ids.suite_span_id(suite_run_id) if suite_run_id else None, start, end,
                    kind="client", remote_parent=bool(suite_run_id))
    root.attributes = _run_attributes(run, source.agent_name)
    _set_run_status(root, run)
    root.links = _links(run, source.linked_suites)
    if capture_content:
        _put(root.attributes, "gen_ai.input.messages", _messages("user", run.get("input")))
        _put(root.attributes, "gen_ai.output.messages",
             _messages("assistant", {"parts": run.get("output") or []}, run.get("status")))
    spans = [root]
    spans += _phase_spans(run_id, trace, root, source.events)
    spans += _node_spans(run_id, trace, root, source.events)
    return spans


def suite_span(suite_run: dict[str, Any], suite_name: str) -> SpanDesc:
    """A suite run's span: the parent its runs' `invoke_agent` spans name."""
    sid: str = suite_run["id"]
    start = parse_time(suite_run.get("created_at")) or 0
    end = max(parse_time(suite_run.get("ended_at")) or start, start)
    span = SpanDesc(f"suite_run {suite_name}", ids.trace_id(sid, sid), ids.suite_span_id(sid),
                    None, start, end)
    attrs = span.attributes
    _put(attrs, PREFIX + "suite_run.id", sid)
    _put(attrs, PREFIX + "suite.name", suite_name)
    _put(attrs, PREFIX + "suite.id", suite_run.get("suite_id"))
    _put(attrs, PREFIX + "suite_run.status", suite_run.get("status"))
    _put(attrs, PREFIX + "suite_run.reason", suite_run.get("reason"))
    _put(attrs, PREFIX + "suite_run.trigger", suite_run.get("trigger"))
    _put(attrs, PREFIX + "code_fingerprint", suite_run.get("code_fingerprint"))
    return span


def _run_attributes(run: dict[str, Any], agent_name: str) -> dict[str, AttrValue]:
    attrs: dict[str, AttrValue] = {"gen_ai.operation.name": "invoke_agent"}
    _put(attrs, "gen_ai.agent.name", agent_name)
    _put(attrs, "gen_ai.conversation.id", run.get("context_id"))
    for key, column in (("run.id", "id"), ("session.id", "session_id"),
                        ("run.status", "status"), ("run.reason", "reason"),
                        ("code_fingerprint", "code_fingerprint"), ("generation", "generation"),
                        ("a2a.version", "a2a_version"), ("a2a.task_id", "task_id"),
                        ("run.label", "label"), ("suite_run.id", "suite_run_id"),
                        ("case.id", "case_id"), ("run.rerun_of", "rerun_of"),
                        ("run.resumes", "parent_run_id")):
        _put(attrs, PREFIX + key, run.get(column))
    return attrs


def _set_run_status(span: SpanDesc, run: dict[str, Any]) -> None:
    status = run.get("status")
    if status in ERROR_STATUSES:
        span.status = "error"
        error = run.get("error") or {}
        span.status_message = _text(error.get("message") or run.get("reason") or status)
        span.attributes["error.type"] = str(run.get("reason") or status)
    elif status in ("completed", "input_required"):
        span.status = "ok"


def _links(run: dict[str, Any], linked_suites: dict[str, str | None]) -> list[SpanLink]:
    links = []
    for column, relation in (("parent_run_id", "resumes"), ("rerun_of", "rerun_of")):
        other = run.get(column)
        if other:
            links.append(SpanLink(ids.trace_id(other, linked_suites.get(other)),
                                  ids.run_span_id(other),
                                  {PREFIX + "link": relation, PREFIX + "run.id": other}))
    return links


def _messages(role: str, body: Any, finish: str | None = None) -> str | None:
    parts = body.get("parts") if isinstance(body, dict) else None
    out = [p for p in (_part(part) for part in parts or []) if p is not None]
    if not out:
        return None
    message: dict[str, Any] = {"role": role, "parts": out}
    if finish:
        message["finish_reason"] = finish
    return orjson.dumps(redact([message])).decode()


def _part(part: Any) -> dict[str, Any] | None:
    """A stored part as a GenAI message part; a file by its name and hash, never its bytes."""
    if not isinstance(part, dict):
        return None
    kind = part.get("kind")
    if kind == "text":
        return {"type": "text", "content": part.get("text", "")}
    if kind == "data":
        return {"type": "data", "content": part.get("data")}
    if kind == "file":
        return {"type": "file", **{k: part[k] for k in ("name", "mime", "sha256", "size", "uri")
                                   if part.get(k) is not None}}
    return None


def _phase_spans(run_id: str, trace: int, root: SpanDesc,
                 events: list[StoredEvent]) -> list[SpanDesc]:
    spans: list[SpanDesc] = []
    opened: dict[str, tuple[int, int]] = {}  # phase → (start, index)
    last_end = root.start_ns
    for event in events:
        if event.kind != "run.phase":
            continue
        phase, state = str(event.data.get("phase", "")), str(event.data.get("state", ""))
        if state == "started":
            opened[phase] = (event.ts_ns, len(spans))
            continue
        began = opened.pop(phase, None)
        # A phase said once (skipped, complete) spans from where the last one ended.
        start = began[0] if began else min(last_end, event.ts_ns)
        span = SpanDesc(phase, trace, ids.span_id(run_id, "phase", phase, str(len(spans))),
                        root.span_id, start, max(event.ts_ns, start))
        attrs = span.attributes
        attrs[PREFIX + "phase"] = phase
        attrs[PREFIX + "phase.state"] = state
        for key in PHASE_FIELDS:
            _put(attrs, f"{PREFIX}phase.{key}", event.data.get(key))
        if state == "failed":
            span.status = "error"
            span.status_message = _text(event.data.get("message") or event.data.get("reason")
                                        or "failed")
        spans.append(span)
        last_end = max(last_end, span.end_ns)
    for phase, (start, _) in opened.items():  # never closed (a crash's history): to the end
        span = SpanDesc(phase, trace, ids.span_id(run_id, "phase", phase, str(len(spans))),
                        root.span_id, start, max(root.end_ns, start))
        span.attributes = {PREFIX + "phase": phase, PREFIX + "phase.state": "unfinished"}
        spans.append(span)
    spans.sort(key=lambda s: (s.start_ns, s.end_ns))
    return spans


def _node_spans(run_id: str, trace: int, root: SpanDesc,
                events: list[StoredEvent]) -> list[SpanDesc]:
    spans: list[SpanDesc] = []
    open_nodes: list[SpanDesc] = []  # innermost last
    by_node: dict[str, SpanDesc] = {}  # a node's latest span: where its evaluations go
    for event in events:
        if event.kind != "trace":
            continue
        data = event.data
        kind = data.get("type")
        at = _host_time(data.get("ts"), event.ts_ns)
        node = data.get("node")
        if kind == "node.start" and isinstance(node, str):
            parent = open_nodes[-1] if open_nodes else root
            span = SpanDesc(f"node {node}", trace,
                            ids.span_id(run_id, "node", node, str(len(spans))),
                            parent.span_id, at, at)
            span.attributes = {PREFIX + "node.id": node}
            spans.append(span)
            open_nodes.append(span)
            by_node[node] = span
        elif kind in ("node.end", "node.error") and isinstance(node, str):
            ending = next((s for s in reversed(open_nodes)
                           if s.attributes[PREFIX + "node.id"] == node), None)
            if ending is None:
                continue
            span = ending
            open_nodes.remove(span)
            span.end_ns = max(at, span.start_ns)
            failed = kind == "node.error" or data.get("error") is not None \
                or data.get("status") in ("failed", "error")
            span.attributes[PREFIX + "node.outcome"] = "failed" if failed else "completed"
            if failed:
                span.status = "error"
                span.status_message = _text(data.get("error") or data.get("message") or "failed")
        elif kind == "evaluation.result":
            target = by_node.get(node) if isinstance(node, str) else None
            (target or root).events.append(_evaluation(data, at))
    for span in open_nodes:  # the run ended while it ran
        span.end_ns = max(root.end_ns, span.start_ns)
        span.attributes[PREFIX + "node.outcome"] = "unfinished"
    return spans


def _evaluation(data: dict[str, Any], at: int) -> SpanEvent:
    attrs: dict[str, AttrValue] = {}
    _put(attrs, "gen_ai.evaluation.name", data.get("evaluator", data.get("name")))
    score = data.get("score")
    if isinstance(score, (int, float)) and not isinstance(score, bool):
        attrs["gen_ai.evaluation.score.value"] = float(score)
    _put(attrs, "gen_ai.evaluation.score.label", data.get("passStatus"))
    _put(attrs, "gen_ai.evaluation.explanation", data.get("reason"))
    _put(attrs, PREFIX + "evaluation.scope", data.get("scope"))
    _put(attrs, PREFIX + "evaluation.node", data.get("node"))
    return SpanEvent("gen_ai.evaluation.result", at, attrs)
