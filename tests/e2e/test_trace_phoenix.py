"""Runs of both bundled examples exported to a real collector, Arize Phoenix, started by the
test on loopback (offline), and read back through Phoenix's own REST API: the tree, the
attributes, the evaluation events, and the Host's spans under the run's.

Phoenix is not in the test extra (it brings some two hundred packages of its own, and its
pins would move ours): the test runs when `LLAMON_TEST_PHOENIX` names a `phoenix`
executable, e.g. one installed with `python3.11 -m venv /tmp/phx && /tmp/phx/bin/pip
install arize-phoenix` (docs/tracing.md), and is skipped otherwise, saying so.
"""

from __future__ import annotations

import os
import shutil
import socket
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from llamon_playground.daemon.tracing import ids
from llamon_playground.harness.processes import Proc
from tests.support.api import Api
from tests.support.procs import REPO, copy_example, stack_for
from tests.support.waiting import eventually

PHOENIX = os.environ.get("LLAMON_TEST_PHOENIX", "")
pytestmark = [
    pytest.mark.skipif(not (PHOENIX and os.access(PHOENIX, os.X_OK)),
                       reason="set LLAMON_TEST_PHOENIX to a phoenix executable to run"),
    pytest.mark.timeout(240),  # Phoenix itself takes 30-45 s to start on these machines
]
PROJECT = "llamon-e2e"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=5) as resp:
        return orjson.loads(resp.read())


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    work = tmp_path_factory.mktemp("phoenix")
    port = free_port()
    env = {**os.environ, "PHOENIX_WORKING_DIR": str(work), "PHOENIX_HOST": "127.0.0.1",
           "PHOENIX_PORT": str(port), "PHOENIX_GRPC_PORT": str(free_port()),
           "PHOENIX_TELEMETRY_ENABLED": "false"}
    proc = Proc([PHOENIX, "serve"], env, work / "phoenix.log", work)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(url + "/healthz", timeout=2):
                    break
            except OSError as exc:
                if proc.popen.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(
                        f"Phoenix did not start:\n{proc.output()[-2000:]}") from exc
                time.sleep(0.5)  # polling a process we do not own the readiness of
        yield url
    finally:
        proc.stop()


@pytest.fixture
async def traced(tmp_path: Path, runtime_base: Path, phoenix: str,
                 request: pytest.FixtureRequest) -> AsyncIterator[Api]:
    example = request.param
    project = copy_example(tmp_path) if example == "echo_agent" else Path(shutil.copytree(
        REPO / "examples" / "flow_project", tmp_path / "flow_project",
        ignore=shutil.ignore_patterns(".llamon", "__pycache__")))
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": phoenix, "OTEL_BSP_SCHEDULE_DELAY": "100",
           "OTEL_RESOURCE_ATTRIBUTES": f"openinference.project.name={PROJECT}"}
    with stack_for(project, runtime_base, extra_env=env) as stack:
        stack.start_daemon()
        client = Api.for_socket(str(stack.settings.socket_path))
        yield client
        await client.close()


def spans_of(phoenix: str, trace: str) -> list[dict[str, Any]]:
    try:
        doc = get_json(f"{phoenix}/v1/projects/{PROJECT}/spans?limit=1000")
    except urllib.error.HTTPError as exc:
        if exc.code == 404:  # Phoenix makes the project when its first span arrives
            return []
        raise
    return [s for s in doc["data"] if s["context"]["trace_id"] == trace]


REQUESTS = {
    "echo_agent": ([{"kind": "text", "text": "stream hello big world"}], "echo_agent", "echo",
                   {"word_count": "node echo", "mentions_hello": None}),
    "flow_project": ([{"kind": "data", "data": {"schema": "approval.v1", "requestId": "R-7",
                                                "amount": 120}}], "approval_flow", "approve",
                     {"decided": "node notify"}),
}


@pytest.mark.parametrize("traced", ["echo_agent", "flow_project"], indirect=True)
async def test_phoenix_holds_the_runs_trace(traced: Api, phoenix: str,
                                            request: pytest.FixtureRequest) -> None:
    example = request.node.callspec.params["traced"]
    parts, agent, first_node, evaluations = REQUESTS[example]
    session = await traced.session()
    created = await traced.ok("POST", f"sessions/{session}/runs", {"parts": parts}, 202)
    run = await traced.wait_status(created["run_id"])
    assert run["status"] == "completed", run
    trace, run_span = f"{ids.trace_id(run['id']):032x}", f"{ids.run_span_id(run['id']):016x}"

    def whole(spans: list[dict[str, Any]]) -> bool:
        names = {s["name"] for s in spans}
        return "complete" in names and "POST /" in names
    spans = await eventually(lambda: spans_of(phoenix, trace), whole,
                             what="the run's trace in Phoenix", timeout=60)
    by_id = {s["context"]["span_id"]: s for s in spans}
    root = by_id[run_span]
    assert root["parent_id"] is None and root["name"] == f"invoke_agent {agent}"
    assert root["status_code"] == "OK"
    assert root["attributes"]["gen_ai.agent.name"] == agent
    assert root["attributes"]["gen_ai.conversation.id"] == run["context_id"]
    assert root["attributes"]["llamon.playground.run.id"] == run["id"]
    children = {s["name"] for s in spans if s["parent_id"] == run_span}
    assert {"validate", "ready", "send", "complete", f"node {first_node}", "POST /"} <= children
    # Every evaluator result is an event on its node's span, or on the run's.
    for evaluator, where in evaluations.items():
        holder = root if where is None else next(s for s in spans if s["name"] == where)
        events = [e["attributes"] for e in holder["events"]
                  if e["name"] == "gen_ai.evaluation.result"]
        assert evaluator in [e["gen_ai.evaluation.name"] for e in events], (where, events)
    # The Host's spans are all in the run's trace, under its span.
    for span in spans:
        hops, parent = 0, span["context"]["span_id"]
        while parent in by_id and parent != run_span and hops < 100:
            parent, hops = by_id[parent]["parent_id"], hops + 1
        assert parent == run_span, span["name"]
