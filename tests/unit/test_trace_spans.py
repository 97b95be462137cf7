"""The span tree of a stored run (daemon/tracing/spans.py): phases, nodes, evaluations,
links, the suite run's parent, content capture off and on, redaction."""

from __future__ import annotations

import json
from typing import Any

from llamon_playground.daemon.tracing import ids
from llamon_playground.daemon.tracing.settings import trace_settings
from llamon_playground.daemon.tracing.spans import (
    RunTraceInput,
    SpanDesc,
    StoredEvent,
    parse_time,
    run_spans,
    suite_span,
)

T0 = parse_time("2026-12-04T13:00:00.000Z") or 0
MS = 1_000_000


def ev(kind: str, at_ms: int, **data: Any) -> StoredEvent:
    return StoredEvent(kind, T0 + at_ms * MS, data)


def row(**over: Any) -> dict[str, Any]:
    base = {"id": "run_a", "session_id": "ses_1", "status": "completed", "reason": None,
            "created_at": "2026-12-04T13:00:00.000Z", "ended_at": "2026-12-04T13:00:01.000Z",
            "context_id": "ctx-1", "task_id": "task-1", "parent_run_id": None,
            "rerun_of": None, "suite_run_id": None, "case_id": None, "generation": 2,
            "code_fingerprint": "abc123", "a2a_version": "1.0", "label": None,
            "input": {"parts": [{"kind": "text", "text": "hello"}], "metadata": {}},
            "output": [{"kind": "text", "text": "hi there"}], "error": None}
    return {**base, **over}


EVENTS = [
    ev("run.status", 0, status="queued"),
    ev("run.phase", 1, phase="validate", state="started"),
    ev("run.phase", 5, phase="validate", state="completed"),
    ev("run.phase", 6, phase="save", state="skipped"),
    ev("run.phase", 7, phase="restart", state="skipped"),
    ev("run.phase", 8, phase="ready", state="started"),
    ev("run.phase", 10, phase="ready", state="completed", generation=2),
    ev("run.phase", 11, phase="send", state="started"),
    ev("trace", 20, type="node.start", node="outer", ts=(T0 + 20 * MS) / 1e9),
    ev("trace", 30, type="node.start", node="inner", ts=(T0 + 30 * MS) / 1e9),
    ev("trace", 40, type="node.end", node="inner", ts=(T0 + 40 * MS) / 1e9),
    ev("trace", 41, type="evaluation.result", evaluator="good", score=0.5, passStatus="fail",
       reason="half", node="inner", ts=(T0 + 41 * MS) / 1e9),
    ev("trace", 50, type="node.end", node="outer", ts=(T0 + 50 * MS) / 1e9),
    ev("trace", 60, type="evaluation.result", evaluator="overall", score=1,
       ts=(T0 + 60 * MS) / 1e9),
    ev("run.phase", 900, phase="send", state="completed", task_state="completed"),
    ev("run.phase", 1001, phase="complete", state="completed", status="completed"),
    ev("run.status", 1001, status="completed", previous="running"),
]


def build(run: dict[str, Any] | None = None, events: list[StoredEvent] | None = None,
          capture: bool = False, **kw: Any) -> list[SpanDesc]:
    return run_spans(RunTraceInput(run or row(), EVENTS if events is None else events,
                                   "echo_agent", **kw), capture_content=capture)


def by_name(spans: list[SpanDesc]) -> dict[str, SpanDesc]:
    return {s.name: s for s in spans}


def test_the_run_is_an_invoke_agent_client_span_with_its_ids_known_at_its_start() -> None:
    spans = build()
    root = spans[0]
    assert root.name == "invoke_agent echo_agent" and root.kind == "client"
    assert (root.trace_id, root.span_id, root.parent_id) == (
        ids.trace_id("run_a"), ids.run_span_id("run_a"), None)
    header = ids.traceparent("run_a")
    assert header == f"00-{root.trace_id:032x}-{root.span_id:016x}-01"
    assert root.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert root.attributes["gen_ai.agent.name"] == "echo_agent"
    assert root.attributes["gen_ai.conversation.id"] == "ctx-1"
    assert root.attributes["llamon.playground.code_fingerprint"] == "abc123"
    assert root.attributes["llamon.playground.run.status"] == "completed"
    assert root.status == "ok"
    # The terminal events commit after the row's ended_at: the span takes them in.
    assert root.start_ns == T0 and root.end_ns == T0 + 1001 * MS


def test_phases_are_children_with_their_real_start_and_end() -> None:
    spans = by_name(build())
    root = spans["invoke_agent echo_agent"]
    validate, send, ready = spans["validate"], spans["send"], spans["ready"]
    assert (validate.start_ns, validate.end_ns) == (T0 + 1 * MS, T0 + 5 * MS)
    assert (send.start_ns, send.end_ns) == (T0 + 11 * MS, T0 + 900 * MS)
    assert ready.attributes["llamon.playground.phase.generation"] == 2
    assert send.attributes["llamon.playground.phase.task_state"] == "completed"
    # Said once: a skipped phase, and complete, from where the phase before it ended.
    assert spans["save"].attributes["llamon.playground.phase.state"] == "skipped"
    assert (spans["complete"].start_ns, spans["complete"].end_ns) == (T0 + 900 * MS,
                                                                      T0 + 1001 * MS)
    phases = [s for s in spans.values() if "llamon.playground.phase" in s.attributes]
    assert len(phases) == 6 and all(p.parent_id == root.span_id for p in phases)


def test_nodes_nest_and_evaluations_go_to_their_nodes_span_or_the_runs() -> None:
    spans = by_name(build())
    root, outer, inner = spans["invoke_agent echo_agent"], spans["node outer"], spans["node inner"]
    assert outer.parent_id == root.span_id and inner.parent_id == outer.span_id
    assert (inner.start_ns, inner.end_ns) == (T0 + 30 * MS, T0 + 40 * MS)
    assert inner.attributes["llamon.playground.node.outcome"] == "completed"
    assert [(e.name, e.attributes) for e in inner.events] == [("gen_ai.evaluation.result", {
        "gen_ai.evaluation.name": "good", "gen_ai.evaluation.score.value": 0.5,
        "gen_ai.evaluation.score.label": "fail", "gen_ai.evaluation.explanation": "half",
        "llamon.playground.evaluation.node": "inner"})]
    assert [e.attributes["gen_ai.evaluation.name"] for e in root.events] == ["overall"]


def test_a_node_the_run_ended_in_ends_with_the_run_unfinished() -> None:
    events = [ev("run.status", 0, status="queued"),
              ev("trace", 20, type="node.start", node="slow", ts=(T0 + 20 * MS) / 1e9),
              ev("run.status", 1000, status="cancelled")]
    spans = by_name(build(row(status="cancelled", reason="user_cancelled"), events))
    node = spans["node slow"]
    assert node.end_ns == spans["invoke_agent echo_agent"].end_ns
    assert node.attributes["llamon.playground.node.outcome"] == "unfinished"


def test_a_failed_run_and_its_failed_phase_are_errors() -> None:
    events = [ev("run.phase", 1, phase="send", state="started"),
              ev("run.phase", 9, phase="send", state="failed", reason="host_exited",
                 message="the Host exited"),
              ev("run.status", 10, status="failed")]
    spans = by_name(build(row(status="failed", reason="host_exited",
                              error={"message": "the Host exited"}), events))
    root = spans["invoke_agent echo_agent"]
    assert (root.status, root.status_message) == ("error", "the Host exited")
    assert root.attributes["error.type"] == "host_exited"
    assert spans["send"].status == "error"


def test_a_resume_links_to_the_run_it_answers_and_a_rerun_to_its_source() -> None:
    resumed = build(row(id="run_b", parent_run_id="run_a"))[0]
    assert [(lk.trace_id, lk.span_id, lk.attributes["llamon.playground.link"])
            for lk in resumed.links] == [(ids.trace_id("run_a"), ids.run_span_id("run_a"),
                                          "resumes")]
    rerun = build(row(id="run_c", rerun_of="run_s"), linked_suites={"run_s": "sr_9"})[0]
    assert [(lk.trace_id, lk.span_id, lk.attributes["llamon.playground.link"])
            for lk in rerun.links] == [(ids.trace_id("run_s", "sr_9"), ids.run_span_id("run_s"),
                                        "rerun_of")]


def test_a_suite_runs_runs_share_its_trace_and_its_span_as_parent() -> None:
    first = build(row(id="run_1", suite_run_id="sr_1"))[0]
    second = build(row(id="run_2", suite_run_id="sr_1"))[0]
    suite = suite_span({"id": "sr_1", "suite_id": "su_1", "status": "completed",
                        "created_at": "2026-12-04T12:59:59.000Z",
                        "ended_at": "2026-12-04T13:00:02.000Z", "trigger": "manual"}, "smoke")
    assert first.trace_id == second.trace_id == suite.trace_id == ids.trace_id("x", "sr_1")
    assert first.parent_id == second.parent_id == suite.span_id
    assert first.remote_parent and suite.parent_id is None
    assert ids.traceparent("run_1", "sr_1").split("-")[1] == f"{suite.trace_id:032x}"
    assert suite.name == "suite_run smoke"


def test_content_is_left_out_unless_asked() -> None:
    root = build()[0]
    assert not any(k.startswith(("gen_ai.input", "gen_ai.output")) for k in root.attributes)


def test_content_when_asked_is_redacted_and_files_go_by_name_and_hash() -> None:
    run = row(input={"parts": [
        {"kind": "text", "text": "use sk-abcdefghijklmnopqrstuvwxyz0123 please"},
        {"kind": "data", "data": {"api_key": "hunter2", "city": "Oslo"}},
        {"kind": "file", "name": "a.png", "mime": "image/png", "sha256": "ff" * 32, "size": 3}],
        "metadata": {}})
    root = build(run, capture=True)[0]
    messages = json.loads(str(root.attributes["gen_ai.input.messages"]))
    assert messages[0]["role"] == "user"
    text, data, file = messages[0]["parts"]
    assert "sk-abcdefghijklmnopqrstuvwxyz0123" not in text["content"]
    assert "[REDACTED]" in text["content"]
    assert data["content"] == {"api_key": "[REDACTED]", "city": "Oslo"}
    assert file == {"type": "file", "name": "a.png", "mime": "image/png", "sha256": "ff" * 32,
                    "size": 3}
    output = json.loads(str(root.attributes["gen_ai.output.messages"]))
    assert output == [{"role": "assistant", "parts": [{"type": "text", "content": "hi there"}],
                       "finish_reason": "completed"}]


def test_the_switches_are_the_standard_ones() -> None:
    assert not trace_settings({}).enabled
    on = trace_settings({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318",
                         "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"})
    assert on.enabled and on.protocol == "http/protobuf" and on.capture_content
    assert trace_settings({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://h:4317"}).protocol \
        == "grpc"
    assert trace_settings({}, "http://127.0.0.1:6006").endpoint == "http://127.0.0.1:6006"
    assert not trace_settings({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x",
                               "OTEL_TRACES_EXPORTER": "none"}).enabled
    assert not trace_settings({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x",
                               "OTEL_SDK_DISABLED": "true"}).enabled
