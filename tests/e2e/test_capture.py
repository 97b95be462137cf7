"""The capture channel: traces and scores from the Host, token checks, token never stored."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import aiohttp
import pytest

from tests.support.api import Api
from tests.support.procs import Stack, copy_example, stack_for
from tests.support.projects import tiny_project
from tests.support.waiting import eventually

CAPTURE = "/capture/v1/events"


@pytest.fixture
def project(tmp_path: Path, request: pytest.FixtureRequest) -> Path:
    """The example project; `"cold"` (indirect) turns warm starts off for the tests that
    read the token from the Host's environment block: a warm generation's token is in its
    os.environ only, its /proc/<pid>/environ is its warm parent's (host.md)."""
    project = copy_example(tmp_path)
    if getattr(request, "param", "warm") == "cold":
        pyproject = project / "pyproject.toml"
        pyproject.write_text(pyproject.read_text() + "warm_start = false\n")
    return project


def host_token(stack: Stack) -> str:
    for proc in stack.daemon.descendants():  # type: ignore[union-attr]
        token = proc.environ().get("LLAMON_CAPTURE_TOKEN")
        if token:
            return token
    raise AssertionError("no Host with a capture token")


async def post_capture(stack: Stack, token: str | None, body: dict) -> tuple[int, dict]:  # type: ignore[type-arg]
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    connector = aiohttp.UnixConnector(path=str(stack.settings.socket_path))
    async with aiohttp.ClientSession(connector=connector) as http:
        async with http.post("http://daemon" + CAPTURE, json=body, headers=headers) as resp:
            return resp.status, await resp.json()


async def test_traces_and_scores_land_on_the_run(api: Api) -> None:
    session = await api.session()
    run = await api.wait_status(await api.start_run(session, "stream hello big world"))
    assert run["status"] == "completed"
    assert run["scores"] == [
        {"evaluator": "word_count", "score": 3, "passStatus": "pass", "node": "echo",
         "scope": "node"},
        {"evaluator": "mentions_hello", "score": 1.0, "passStatus": "pass",
         "reason": "the answer says hello"}]
    assert run["score_summary"] == {"evaluators": 2, "failed": 0}
    traces = [e.data for e in await api.events(run["id"]) if e.event == "trace"]
    assert [t["type"] for t in traces] == ["node.start", "node.end", "evaluation.result",
                                           "evaluation.result"]
    # The echo Host sends no times: each event carries the time it arrived, in order.
    times = [t["ts"] for t in traces]
    assert times == sorted(times) and times[0] > 1e9
    other = await api.wait_status(await api.start_run(session, "stream bye"))
    assert other["score_summary"] == {"evaluators": 2, "failed": 1}
    assert (await api.run(run["id"]))["scores"] == run["scores"], "scores stay on their run"


@pytest.mark.parametrize("project", ["cold"], indirect=True)
async def test_capture_refuses_wrong_and_old_tokens(api: Api, daemon: Stack) -> None:
    session = await api.session()
    await api.wait_status(await api.start_run(session, "stream warm"))
    token = host_token(daemon)
    body = {"run_id": "run_x", "events": [{"type": "node.start"}]}
    assert (await post_capture(daemon, None, body))[0] == 401
    code, doc = await post_capture(daemon, "wrong-token", body)
    assert code == 401 and doc["detail"]["error"] == "capture_refused"
    code, doc = await post_capture(daemon, token, body)
    assert code == 409 and doc["detail"]["error"] == "capture_not_active"
    await api.ok("POST", "host/restart")
    code, doc = await post_capture(daemon, token, body)
    assert code == 401, "a previous generation's token is refused"
    # The front never relays the capture endpoint.
    code, _ = await api.call("POST", CAPTURE, body)
    assert code == 404


@pytest.mark.parametrize("project", ["cold"], indirect=True)
async def test_capture_token_never_reaches_disk_or_api(api: Api, daemon: Stack) -> None:
    session = await api.session()
    runs = [await api.start_run(session, "stream hello canary")]
    await api.wait_status(runs[0])
    token = host_token(daemon)
    runs.append(await api.start_run(session, "data"))
    await api.wait_status(runs[1])
    ask = await api.wait_status(await api.start_run(session, "ask"))
    child = (await api.ok("POST", f"runs/{ask['id']}/resume",
                          {"parts": [{"kind": "text", "text": "Canary"}]}, 202))["run_id"]
    await api.wait_status(child)
    needle = token.encode()
    for path in _all_files(daemon.project / ".llamon") + _all_files(daemon.runtime_base):
        assert needle not in path.read_bytes(), f"capture token found in {path}"
    for route in ["host", "sessions", f"runs/{child}", f"runs/{ask['id']}/events", "/health"]:
        _code, doc = await api.call("GET", route)
        assert needle.decode() not in str(doc)
    proof_seen = False
    for line in (daemon.settings.host_log_path.read_text()).splitlines():
        proof_seen |= "proof" in line
    assert not proof_seen


async def test_a_host_printing_its_token_leaks_it_nowhere(tmp_path: Path,
                                                          runtime_base: Path) -> None:
    project = tiny_project(tmp_path, "leaky")
    with stack_for(project, runtime_base,
                   extra_env={"LLAMON_PLAYGROUND_CRASH_LIMIT": "1"}) as stack:
        stack.start_daemon()
        api = Api.for_socket(str(stack.settings.socket_path))
        try:
            session = await api.session()
            run = await api.wait_status(await api.start_run(session, "hello"))
            assert run["status"] == "failed" and run["reason"] == "runtime_unavailable"
            assert any("[REDACTED capture token]" in ln for ln in run["error"]["log_tail"])
            tokens = (project / "tokens.txt").read_text().split()
            assert tokens
            answers = [await api.call("GET", route) for route in (
                "host/logs", f"runs/{run['id']}", f"sessions/{session}/runs", "host")]
            answers.append(await api.call("POST", "bundles/export", {"run_ids": [run["id"]]}))
            files = _all_files(project / ".llamon") + _all_files(runtime_base)
            for token in tokens:
                for code, doc in answers:
                    assert code == 200 and token not in str(doc)
                for path in files:
                    assert token.encode() not in path.read_bytes(), f"token found in {path}"
        finally:
            await api.close()


def _all_files(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and not p.is_socket()]


@pytest.fixture
def short_busy(project: Path, runtime_base: Path):  # type: ignore[no-untyped-def]
    env = {"LLAMON_PLAYGROUND_DB_BUSY_TIMEOUT_MS": "100", "ECHO_CHUNK_DELAY_MS": "20"}
    with stack_for(project, runtime_base, extra_env=env) as s:
        s.start_daemon()
        yield s


async def test_history_write_failure_is_a_diagnostic_and_the_run_goes_on(
        short_busy: Stack) -> None:
    api = Api.for_socket(str(short_busy.settings.socket_path))
    try:
        session = await api.session()
        words = " ".join(f"w{i}" for i in range(40))
        run_id = await api.start_run(session, "stream " + words)
        blocker = None
        async for ev in api.stream(run_id):
            if ev.event == "output.delta" and blocker is None:
                # Another connection holds SQLite's write lock: the daemon's commits fail.
                blocker = sqlite3.connect(short_busy.settings.db_path, isolation_level=None)
                blocker.execute("BEGIN IMMEDIATE")
                await _wait_degraded(api)
                blocker.execute("ROLLBACK")
                blocker.close()
        run = await api.wait_status(run_id)
        assert run["status"] == "completed"
        assert run["output"] == [{"kind": "text", "text": words}]
        events = await api.events(run_id)
        diagnostics = [e.data for e in events if e.event == "diagnostic"]
        assert [d["code"] for d in diagnostics] == ["history_degraded"]
        deltas = "".join(e.data["text"] for e in events if e.event == "output.delta")
        assert deltas == words, "no delta was lost while history was degraded"
    finally:
        await api.close()


async def _wait_degraded(api: Api) -> None:
    await eventually(lambda: api.ok("GET", "/health"), lambda h: h["history_degraded"],
                     "history to report degraded", timeout=10, interval=0.02)


@pytest.mark.parametrize("project", ["cold"], indirect=True)
async def test_a_score_keeps_the_keys_a_newer_runtime_sends(api: Api, daemon: Stack) -> None:
    session = await api.session()
    run_id = await api.start_run(session, "slow")
    await api.first_output(run_id)
    result = {"type": "evaluation.result", "evaluator": "future", "score": 0.5,
              "passStatus": "pass", "futurekey": {"nested": [1, "two"]}, "weight": 3}
    code, doc = await post_capture(daemon, host_token(daemon),
                                   {"run_id": run_id, "events": [result]})
    assert code == 200, doc
    await api.ok("DELETE", f"runs/{run_id}")
    run = await api.wait_status(run_id)
    assert run["scores"] == [{"evaluator": "future", "score": 0.5, "passStatus": "pass",
                              "futurekey": {"nested": [1, "two"]}, "weight": 3}]
