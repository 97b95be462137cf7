"""A full run through the real front, daemon and example Host.

The first test starts its own daemon (its run is the one that starts the Host); the others
share the module's, each reading only its own session."""

from __future__ import annotations

import hashlib

from tests.support.api import Api
from tests.support.procs import Stack


async def test_stream_run_through_front_completes_with_stored_parts(api: Api) -> None:
    session = await api.session()
    run_id = await api.start_run(session, "stream one two three four five")
    events = await api.events(run_id)
    kinds = [e.event for e in events]
    assert kinds[0] == "run.status" and events[0].data["status"] == "queued"
    assert events[-1].event == "run.status" and events[-1].data["status"] == "completed"
    seqs = [e.id for e in events]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    for e in events:
        assert e.data["seq"] == e.id and e.data["run_id"] == run_id and e.data["kind"] == e.event
    deltas = [e.data["text"] for e in events if e.event == "output.delta"]
    assert len(deltas) == 5 and "".join(deltas) == "one two three four five"
    phases = [(e.data["phase"], e.data["state"]) for e in events if e.event == "run.phase"]
    for expected in [("validate", "completed"), ("start", "completed"), ("ready", "completed"),
                     ("send", "completed"), ("complete", "completed")]:
        assert expected in phases
    # Each phase ends before the next begins: the Host's process is started (start), then
    # waited for until Ready (ready), then sent the message (send).
    assert phases == [("validate", "started"), ("validate", "completed"), ("save", "skipped"),
                      ("start", "started"), ("start", "completed"), ("ready", "started"),
                      ("ready", "completed"), ("send", "started"), ("send", "completed"),
                      ("complete", "completed")]
    run = await api.run(run_id)
    assert run["status"] == "completed" and run["reason"] is None
    assert run["output"] == [{"kind": "text", "text": "one two three four five"}]
    assert run["duration_ms"] > 0 and run["task_id"]
    listed = await api.ok("GET", f"sessions/{session}/runs")
    assert [r["id"] for r in listed["runs"]] == [run_id]


async def test_data_reply_stores_data_file_and_uri_parts(module_api: Api,
                                                         module_daemon: Stack) -> None:
    api, daemon = module_api, module_daemon
    session = await api.session()
    run_id = await api.start_run(session, "data")
    run = await api.wait_status(run_id)
    assert run["status"] == "completed", run
    kinds = [p["kind"] for p in run["output"]]
    assert kinds == ["data", "file", "file"]
    data, local, external = run["output"]
    assert data["data"]["kind_of"] == "report"
    payload = b"hello from echo_agent\n"
    assert local["sha256"] == hashlib.sha256(payload).hexdigest()
    assert local["size"] == len(payload) and local["source"] == "output"
    blob = daemon.settings.files_dir / local["sha256"]
    assert blob.read_bytes() == payload
    assert external["availability"] == "external"
    assert external["replay"] == "unavailable_for_replay"
    assert external["uri"] == "https://example.invalid/report.pdf"


async def test_input_required_then_resume_keeps_context_and_task(module_api: Api) -> None:
    api = module_api
    session = await api.session()
    first = await api.start_run(session, "ask")
    parent = await api.wait_status(first)
    assert parent["status"] == "input_required"
    assert parent["task_id"]
    assert {"kind": "text", "text": "What is your name?"} in parent["output"]
    child_id = (await api.ok("POST", f"runs/{first}/resume",
                             {"parts": [{"kind": "text", "text": "Ada"}]}, 202))["run_id"]
    child = await api.wait_status(child_id)
    assert child["status"] == "completed", child
    assert child["parent_run_id"] == first
    assert child["context_id"] == parent["context_id"]
    assert child["task_id"] == parent["task_id"]
    assert child["output"][0] == {"kind": "text", "text": "Hello, Ada!"}
    # A parent resumes once; a completed run never.
    code, doc = await api.call("POST", f"runs/{first}/resume",
                               {"parts": [{"kind": "text", "text": "again"}]})
    assert code == 409 and doc["detail"]["error"] == "run_not_resumable"
    code, doc = await api.call("POST", f"runs/{child_id}/resume",
                               {"parts": [{"kind": "text", "text": "again"}]})
    assert code == 409 and doc["detail"]["error"] == "run_not_resumable"


async def test_rerun_clones_input_with_new_context(module_api: Api) -> None:
    api = module_api
    session = await api.session()
    first = await api.start_run(session, "stream same words")
    original = await api.wait_status(first)
    second = (await api.ok("POST", f"runs/{first}/rerun", None, 202))["run_id"]
    rerun = await api.wait_status(second)
    assert rerun["status"] == "completed"
    assert rerun["rerun_of"] == first
    assert rerun["input"]["parts"] == original["input"]["parts"]
    assert rerun["context_id"] != original["context_id"]
    assert rerun["output"] == original["output"]


async def test_session_turns_share_the_context_id(module_api: Api) -> None:
    api = module_api
    session = await api.session()
    a = await api.wait_status(await api.start_run(session, "stream a"))
    b = await api.wait_status(await api.start_run(session, "stream b"))
    sessions = (await api.ok("GET", "sessions"))["sessions"]
    ctx = next(s["context_id"] for s in sessions if s["id"] == session)
    assert a["context_id"] == b["context_id"] == ctx
    assert a["id"] != b["id"]
