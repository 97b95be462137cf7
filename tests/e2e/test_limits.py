"""Every size has a limit: at the limit accepted, just over refused with its code and nothing
written (docs/security.md, "Limits"). Limits a setting raises are tested at small settings
where the default would need megabytes."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson

from tests.e2e.data_support import db_rows, post_big
from tests.e2e.test_capture import host_token, post_capture
from tests.support.api import Api
from tests.support.procs import Stack, copy_example, stack_for

KIB = 1024
MIB = 1024 * KIB


def sized(name: str, size: int) -> dict[str, Any]:
    """`{name: "----"}` of exactly `size` bytes as JSON."""
    doc = {name: ""}
    doc[name] = "-" * (size - len(orjson.dumps(doc)))
    assert len(orjson.dumps(doc)) == size
    return doc


def whole(size: int) -> dict[str, Any]:
    """Metadata of exactly `size` bytes whose values each stay under 64 KiB."""
    doc: dict[str, Any] = {f"k{i}": "-" * (60 * KIB) for i in range(size // (61 * KIB))}
    doc["rest"] = ""
    doc["rest"] = "-" * (size - len(orjson.dumps(doc)))
    assert len(orjson.dumps(doc)) == size and len(doc["rest"]) < 60 * KIB
    return doc


def value_of(size: int) -> dict[str, Any]:
    """Metadata whose one value is exactly `size` bytes as JSON (a string)."""
    return {"note": "-" * (size - 2)}


async def test_metadata_at_its_limits_is_taken_and_just_over_refused(api: Api,
                                                                     daemon: Stack) -> None:
    session = await api.session()
    for metadata in (whole(256 * KIB), value_of(64 * KIB)):
        await api.ok("POST", "sessions", {"metadata": metadata}, 201)
        await api.ok("POST", f"sessions/{session}/runs",
                     {"parts": [{"kind": "text", "text": "x"}], "metadata": metadata}, 202)
        await api.wait_status((await api.ok("GET", f"sessions/{session}/runs"))["runs"][-1]["id"])
    before = db_rows(daemon)
    for metadata in (whole(256 * KIB + 1), value_of(64 * KIB + 1)):
        for method, path, body in (
                ("POST", "sessions", {"metadata": metadata}),
                ("PATCH", f"sessions/{session}", {"metadata": metadata}),
                ("POST", f"sessions/{session}/runs",
                 {"parts": [{"kind": "text", "text": "x"}], "metadata": metadata})):
            code, doc = await api.call(method, path, body)
            assert code == 413 and doc["detail"]["error"] == "metadata_too_large", (path, doc)
            assert "LLAMON_PLAYGROUND_MAX_METADATA" in doc["detail"]["message"]
    # Under the body's 16 MiB, far over the metadata's: refused without being redacted.
    code, doc = await post_big(api, f"sessions/{session}/runs", {
        "parts": [{"kind": "text", "text": "x"}], "metadata": {"note": "-" * (15 << 20)}})
    assert code == 413 and doc["detail"]["error"] == "metadata_too_large"
    assert db_rows(daemon) == before, "a refused request wrote nothing"


async def bundle_with_long_note(size: int) -> AsyncIterator[bytes]:
    """A bundle whose session metadata holds a `size`-byte note, streamed a MiB at a time
    (the test never holds it whole)."""
    yield (b'{"format": "llamon.playground.bundle/1", "runs": [], "events": [], "blobs": {}, '
           b'"sessions": [{"id": "s-1", "title": "t", "metadata": {"note": "')
    chunk = b"-" * MIB
    for _ in range(size // MIB):
        yield chunk
    yield b'"}}]}'


async def test_a_bundle_with_200_mib_of_metadata_is_refused_while_health_answers(
        api: Api, daemon: Stack) -> None:
    await api.session()  # a history to compare with
    before = db_rows(daemon)

    async def import_() -> tuple[int, Any]:
        async with api.http.post("/api/playground/v1/bundles/import",
                                 data=bundle_with_long_note(200 * MIB),
                                 headers={"Content-Type": "application/json"}) as resp:
            return resp.status, orjson.loads(await resp.read())

    importing = asyncio.create_task(import_())
    answers = []
    try:
        while not importing.done():
            answers.append((await api.call("GET", "/health"))[0])
            await asyncio.wait([importing], timeout=0.05)  # a pace, not a wait for a state
        code, doc = await importing
    finally:
        importing.cancel()
    assert code == 413 and doc["detail"]["error"] == "metadata_too_large", doc
    assert "sessions[0].metadata" in doc["detail"]["message"]
    assert answers and set(answers) == {200}, answers
    assert db_rows(daemon) == before, "a refused bundle wrote nothing"


async def test_list_answers_carry_excerpts_and_the_run_is_whole(api: Api) -> None:
    session = await api.session()
    long_word = "w" * 5000
    run = await api.wait_status(await api.start_run(session, f"stream {long_word}",
                                                    metadata=value_of(10 * KIB)))
    assert run["status"] == "completed"
    assert any(long_word in (p.get("text") or "") for p in run["output"]), "GET /runs is whole"
    listed = (await api.ok("GET", f"sessions/{session}/runs"))["runs"][0]
    cut = [p for p in listed["output"] if p.get("truncated")]
    assert cut and all(len(p["text"]) == 2000 and p["size"] > 2000 for p in cut)
    assert listed["input"]["parts"][0]["truncated"] is True
    assert listed["input"]["metadata"] == {} and listed["input"]["metadata_truncated"] is True
    await api.ok("PATCH", f"sessions/{session}", {"metadata": value_of(10 * KIB)})
    sessions = (await api.ok("GET", "sessions"))["sessions"]
    mine = next(s for s in sessions if s["id"] == session)
    assert mine["metadata"] == {} and mine["metadata_truncated"] is True


async def test_host_output_over_its_limits_ends_the_run_keeping_what_came_before(
        tmp_path: Path, runtime_base: Path) -> None:
    event_limit, run_limit = 4096, 50_000
    project = copy_example(tmp_path)
    with stack_for(project, runtime_base, extra_env={
            "LLAMON_PLAYGROUND_MAX_HOST_EVENT_BYTES": str(event_limit),
            "LLAMON_PLAYGROUND_MAX_RUN_OUTPUT_BYTES": str(run_limit)}) as stack:
        stack.start_daemon()
        api = Api.for_socket(str(stack.settings.socket_path))
        try:
            session = await api.session()
            fits = await api.wait_status(await api.start_run(session, "stream " + "a" * 2000))
            assert fits["status"] == "completed"
            # The echo Host's first event (the task, with the input) is over the limit.
            run = await api.wait_status(await api.start_run(
                session, "stream " + "b" * (2 * event_limit)))
            assert run["status"] == "failed" and run["reason"] == "host_output_too_large"
            message = run["error"]["message"]
            assert "LLAMON_PLAYGROUND_MAX_HOST_EVENT_BYTES" in message
            assert str(event_limit) in message
            # Many small events adding up to more than a run may hold.
            run = await api.wait_status(await api.start_run(session, "tokens 2000"))
            assert run["status"] == "failed" and run["reason"] == "host_output_too_large"
            assert "LLAMON_PLAYGROUND_MAX_RUN_OUTPUT_BYTES" in run["error"]["message"]
            kept = "".join(p.get("text") or "" for p in run["output"])
            assert kept.startswith("t0 t1 t2 ") and "t1999" not in kept, "what came before"
            after = await api.wait_status(await api.start_run(session, "stream again"))
            assert after["status"] == "completed", "the Host and the daemon carry on"
        finally:
            await api.close()


async def test_capture_limits(tmp_path: Path, runtime_base: Path) -> None:
    project = copy_example(tmp_path)
    pyproject = project / "pyproject.toml"
    pyproject.write_text(pyproject.read_text() + "warm_start = false\n")  # token in environ
    with stack_for(project, runtime_base, extra_env={
            "LLAMON_PLAYGROUND_MAX_CAPTURE_EVENTS": "3"}) as stack:
        stack.start_daemon()
        api = Api.for_socket(str(stack.settings.socket_path))
        try:
            await _capture_limits(api, stack)
        finally:
            await api.close()


async def _capture_limits(api: Api, stack: Stack) -> None:
    session = await api.session()
    # A run that stays active while the test posts (it ticks until cancelled).
    run_id = await api.start_run(session, "slow")
    await api.first_output(run_id)
    token = host_token(stack)

    async def post(*events: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        return await post_capture(stack, token, {"run_id": run_id, "events": list(events)})

    # The echo Host captures nothing for `slow`: every event counted is the test's.
    code, doc = await post({"type": "node.start", "node": "n" * 256},
                           {"type": "x", **sized("pad", 64 * KIB - len(b'"type":"x",'))})
    assert code == 200 and doc["accepted"] == 2, doc
    for event, status, error in (
            ({"type": "node.start", "node": "n" * 257}, 400, "name_too_long"),
            ({"type": "evaluation.result", "evaluator": "e" * 257, "score": 1}, 400,
             "name_too_long"),
            ({"type": "x", **sized("pad", 64 * KIB + 1 - len(b'"type":"x",'))}, 413,
             "capture_event_too_large")):
        code, doc = await post(event, {"type": "ok"})
        assert code == status and doc["detail"]["error"] == error, doc
    code, doc = await post({"type": "third"})
    assert code == 200
    code, doc = await post({"type": "fourth"})
    assert code == 413 and doc["detail"]["error"] == "too_many_capture_events"
    assert "LLAMON_PLAYGROUND_MAX_CAPTURE_EVENTS" in doc["detail"]["message"]
    code, _ = await api.call("DELETE", f"runs/{run_id}")
    assert code < 300
    await api.wait_status(run_id)
    traces = [e.data for e in await api.events(run_id) if e.event == "trace"]
    assert [t["type"] for t in traces] == ["node.start", "x", "third"], \
        "a refused request stored none of its events"
