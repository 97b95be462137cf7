"""Runs exported as OpenTelemetry traces, read off the wire by a bare OTLP/HTTP receiver:
the real daemon and the bundled example Host, instrumented with OpenTelemetry, both export
to it; the Host's spans sit under the run's `invoke_agent` span because the daemon's A2A
request carried the run's `traceparent`."""

from __future__ import annotations

import asyncio
import socket
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from llamon_playground.daemon.tracing import ids
from tests.support.api import Api
from tests.support.otlp_receiver import OtlpReceiver, run_while_refused
from tests.support.procs import Stack, copy_example, stack_for
from tests.support.waiting import eventually

CLIENT, SERVER = 3, 2  # SpanKind in the protobuf


@pytest.fixture
async def receiver() -> AsyncIterator[OtlpReceiver]:
    rx = await OtlpReceiver().start()
    yield rx
    await rx.close()


@pytest.fixture
def traced(tmp_path: Path, runtime_base: Path, receiver: OtlpReceiver) -> Iterator[Stack]:
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url, "OTEL_BSP_SCHEDULE_DELAY": "100"}
    with stack_for(copy_example(tmp_path), runtime_base, extra_env=env) as stack:
        stack.start_daemon()
        yield stack


@pytest.fixture
async def traced_api(traced: Stack) -> AsyncIterator[Api]:
    client = Api.for_socket(str(traced.settings.socket_path))
    yield client
    await client.close()


async def test_a_run_is_a_trace_with_the_hosts_spans_under_it(
        traced_api: Api, receiver: OtlpReceiver) -> None:
    api = traced_api
    session = await api.session()
    run = await api.wait_status(await api.start_run(session, "stream hello big world"))
    assert run["status"] == "completed"
    trace = f"{ids.trace_id(run['id']):032x}"
    run_span = f"{ids.run_span_id(run['id']):016x}"

    def host_spans() -> list:  # type: ignore[type-arg]
        return [s for s in receiver.of_trace(trace) if s.service != "llamon-playground"]
    await eventually(lambda: [s for s in receiver.of_trace(trace)
                              if s.name == "invoke_agent echo_agent" and s.kind == CLIENT],
                     what="the run's span at the receiver")

    def reaches_run(spans: dict, span_id: str) -> bool:  # type: ignore[type-arg]
        seen = 0
        while span_id in spans and seen < 100:
            span_id, seen = spans[span_id].parent_span_id, seen + 1
        return span_id == run_span

    def host_tree_whole(found: list) -> bool:  # type: ignore[type-arg]
        # The Host sends its spans in batches as they end: its server span comes last.
        spans = {s.span_id: s for s in found}
        return any(s.name == "POST /" for s in found) and all(
            reaches_run(spans, s) for s in spans)
    await eventually(host_spans, host_tree_whole, what="the Host's spans at the receiver")

    ours = {s.span_id: s for s in receiver.of_trace(trace) if s.service == "llamon-playground"}
    root = ours[run_span]
    assert root.parent_span_id == ""
    assert root.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert root.attributes["gen_ai.agent.name"] == "echo_agent"  # from the AgentCard
    assert root.attributes["gen_ai.conversation.id"] == run["context_id"]
    assert root.attributes["llamon.playground.run.id"] == run["id"]
    assert root.attributes["llamon.playground.session.id"] == session
    assert root.attributes["llamon.playground.run.status"] == "completed"
    assert root.attributes["llamon.playground.code_fingerprint"] == run["code_fingerprint"]
    assert root.status_code == 1  # OK
    # Content capture is off: no input or output on the wire.
    assert not any(k.startswith(("gen_ai.input", "gen_ai.output"))
                   for s in ours.values() for k in s.attributes)

    phases = [s for s in ours.values() if "llamon.playground.phase" in s.attributes]
    assert {s.name for s in phases} >= {"validate", "save", "ready", "send", "complete"}
    assert all(s.parent_span_id == run_span for s in phases)
    assert all(root.start_ns <= s.start_ns <= s.end_ns <= root.end_ns for s in phases)
    send = next(s for s in phases if s.name == "send")
    assert send.attributes["llamon.playground.phase.state"] == "completed"

    node = next(s for s in ours.values() if s.name == "node echo")
    assert node.parent_span_id == run_span
    assert node.attributes["llamon.playground.node.outcome"] == "completed"
    # word_count names the node: its event is on the node's span; mentions_hello on the run's.
    assert [(n, a["gen_ai.evaluation.name"], a["gen_ai.evaluation.score.value"],
             a["gen_ai.evaluation.score.label"]) for n, a in node.events] == [
        ("gen_ai.evaluation.result", "word_count", 3.0, "pass")]
    assert [(a["gen_ai.evaluation.name"], a.get("gen_ai.evaluation.explanation"))
            for _, a in root.events] == [("mentions_hello", "the answer says hello")]

    # The Host's server span came from the request's traceparent: the run's span is its
    # parent, and every span the Host made (the a2a-sdk's own among them) is under it.
    spans = {s.span_id: s for s in host_spans()}
    server = [s for s in spans.values() if s.kind == SERVER and s.name == "POST /"]
    assert server and all(s.parent_span_id == run_span for s in server)

    assert any(s.name == "invoke_agent echo_agent" for s in spans.values())

    health = await api.ok("GET", "/health")
    tracing = health["tracing"]
    assert tracing["enabled"] and tracing["opentelemetry_loaded"]
    assert tracing["runs_exported"] >= 1 and tracing["spans_exported"] >= len(ours)
    assert tracing["spans_dropped"] == 0


async def test_a_refusing_collector_costs_the_run_nothing_and_is_counted(
        traced_api: Api, receiver: OtlpReceiver) -> None:
    receiver.refuse = True
    tracing = await run_while_refused(traced_api)
    assert tracing["spans_dropped"] >= tracing["spans_failed"]
    assert tracing["spans_exported"] == 0


async def test_a_stopped_collector_is_said_once_and_its_return_once(
        tmp_path: Path, runtime_base: Path) -> None:
    """A collector that is down for batch after batch is one warning in the daemon's log,
    not the exporter's lines for each batch (a warning a retry, an error at the end); the
    first batch it takes again is one line more. The project's `otlp_endpoint` turns export
    on, so the Host (which never sees it) logs nothing of its own about the collector."""
    stopped = socket.socket()
    stopped.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused
    port = stopped.getsockname()[1]
    project = copy_example(tmp_path)
    pyproject = project / "pyproject.toml"
    pyproject.write_text(pyproject.read_text() + "\n[tool.llamon.playground]\n"
                         f'otlp_endpoint = "http://127.0.0.1:{port}"\n')
    receiver = OtlpReceiver()
    try:
        with stack_for(project, runtime_base) as stack:
            daemon = stack.start_daemon()
            api = Api.for_socket(str(stack.settings.socket_path))
            try:
                session = await api.session()
                failed = 0
                for words in ("one", "two"):  # two runs, each its own failed batch
                    run = await api.wait_status(await api.start_run(session, f"stream {words}"))
                    assert run["status"] == "completed"
                    health = await eventually(
                        lambda: api.ok("GET", "/health"),
                        lambda h, seen=failed: h["tracing"]["spans_failed"] > seen
                        and h["tracing"]["spans_pending"] == 0,
                        what="the run's batch failed", timeout=30)
                    failed = health["tracing"]["spans_failed"]
                lines = daemon.output().splitlines()
                said = [ln for ln in lines if "does not take spans" in ln]
                assert len(said) == 1, lines
                assert f"127.0.0.1:{port}" in said[0] and "refused" in said[0].lower()
                assert not [ln for ln in lines if "does not take spans" not in ln and (
                    "opentelemetry" in ln or "Failed to export" in ln)], lines

                stopped.close()
                await receiver.start(port)  # the collector is back, on the same port
                run = await api.wait_status(await api.start_run(session, "stream three"))
                trace = f"{ids.trace_id(run['id']):032x}"
                await eventually(lambda: [s for s in receiver.of_trace(trace)
                                          if s.name == "complete"], what="the export")
                await eventually(lambda: [ln for ln in daemon.output().splitlines()
                                          if "takes spans again" in ln],
                                 what="its return said")
                health = await api.ok("GET", "/health")
                assert health["tracing"]["spans_failed"] == failed
            finally:
                await api.close()
    finally:
        stopped.close()
        await receiver.close()


async def test_with_no_endpoint_nothing_of_opentelemetry_is_imported(direct: Api) -> None:
    session = await direct.session()
    run = await direct.wait_status(await direct.start_run(session, "stream hello"))
    assert run["status"] == "completed"
    tracing = (await direct.ok("GET", "/health"))["tracing"]
    assert tracing["enabled"] is False and tracing["endpoint"] is None
    assert tracing["opentelemetry_loaded"] is False


async def test_export_traces_backfills_stored_runs_on_the_same_ids(
        traced: Stack, traced_api: Api, receiver: OtlpReceiver) -> None:
    session = await traced_api.session()
    run = await traced_api.wait_status(await traced_api.start_run(session, "stream a b"))
    trace = f"{ids.trace_id(run['id']):032x}"
    live = await eventually(
        lambda: {(s.span_id, s.name, s.parent_span_id) for s in receiver.of_trace(trace)
                 if s.service == "llamon-playground"},
        lambda spans: any(name == "complete" for _, name, _ in spans),
        what="the live export")
    receiver.spans.clear()
    other = await traced_api.session()  # a session of its own: --session leaves it out
    second = await traced_api.wait_status(await traced_api.start_run(other, "stream c"))
    await eventually(lambda: [s for s in receiver.of_trace(f"{ids.trace_id(second['id']):032x}")
                              if s.name == "complete"], what="the second run's live export")
    receiver.spans.clear()
    env = {**traced.env, "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "llamon_playground", "export-traces", str(traced.project),
        "--session", session, "--since", "2020-01-01", env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    _, err = await proc.communicate()
    assert proc.returncode == 0, err.decode()
    assert "exported 1 runs" in err.decode()
    # (The Host's own batches may still arrive: only the daemon's spans are compared.)
    ours = [s for s in receiver.spans if s.service == "llamon-playground"]
    backfilled = {(s.span_id, s.name, s.parent_span_id) for s in ours}
    # The same spans on the same ids, but for the agent's name (no Host was asked).
    assert {(i, p) for i, _, p in backfilled} == {(i, p) for i, _, p in live}
    assert {s.trace_id for s in ours} == {trace}


async def test_status_says_where_traces_go_and_what_became_of_them(
        traced: Stack, traced_api: Api, receiver: OtlpReceiver) -> None:
    session = await traced_api.session()
    await traced_api.wait_status(await traced_api.start_run(session, "stream a"))
    await eventually(lambda: traced_api.ok("GET", "/health"),
                     lambda h: h["tracing"]["runs_exported"] == 1, what="the export")
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "llamon_playground", "status", str(traced.project),
        env=traced.env, stdout=asyncio.subprocess.PIPE)
    out, _ = await proc.communicate()
    line = next(ln for ln in out.decode().splitlines() if ln.startswith("traces:"))
    assert line.startswith(f"traces:     to {receiver.url} (http/protobuf): 1 runs, ")
    assert "0 dropped" in line
