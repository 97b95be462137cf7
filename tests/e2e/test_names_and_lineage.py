"""Labels, notes, session edits, edited reruns and lineage, through the real front, daemon
and example Host."""

from __future__ import annotations

import asyncio
import base64
import hashlib
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import orjson
import pytest

from llamon_playground.common.sse import aiter_sse
from tests.e2e.test_bad_input import counts
from tests.support.api import Api, P
from tests.support.procs import Stack


# One daemon for the module: each test reads only the session it made (a daemon, a front
# and a Host start per test would cost about a second each).
@pytest.fixture
def daemon(module_daemon: Stack) -> Stack:
    return module_daemon


@pytest.fixture
def api(module_api: Api) -> Api:
    return module_api


def text(value: str) -> dict[str, Any]:
    return {"kind": "text", "text": value}


@asynccontextmanager
async def project_events(api: Api, until: Callable[[str, dict[str, Any]], bool]
                         ) -> AsyncIterator[asyncio.Future[list[tuple[str, dict[str, Any]]]]]:
    """Listen to /events (after its snapshot arrived) until `until(kind, data)` holds; the
    future gets every event seen."""
    seen: list[tuple[str, dict[str, Any]]] = []
    done: asyncio.Future[list[tuple[str, dict[str, Any]]]] = \
        asyncio.get_running_loop().create_future()
    subscribed = asyncio.Event()

    async def listen() -> None:
        async with api.http.get(P + "/events", timeout=aiohttp.ClientTimeout(total=60)) as resp:
            async for event in aiter_sse(resp.content.iter_any()):
                data = orjson.loads(event.data)
                seen.append((event.event, data))
                if event.event == "run.active":
                    subscribed.set()
                if until(event.event, data):
                    done.set_result(seen)
                    return

    listener = asyncio.create_task(listen())
    try:
        await asyncio.wait_for(subscribed.wait(), 30)
        yield done
        await asyncio.wait_for(asyncio.shield(done), 30)
    finally:
        listener.cancel()
        await asyncio.gather(listener, return_exceptions=True)


async def test_label_and_note_on_a_finished_run_show_everywhere(api: Api) -> None:
    session = await api.session()
    run_id = await api.start_run(session, "stream label me")
    before = await api.wait_status(run_id)
    async with project_events(api, lambda kind, _: kind == "run.updated") as updated:
        run = await api.ok("PATCH", f"runs/{run_id}", {"label": "baseline", "note": "first try"})
    assert run["label"] == "baseline" and run["note"] == "first try"
    # Never the status, the output or anything else the run recorded.
    assert {k: v for k, v in run.items() if k not in ("label", "note")} == \
        {k: v for k, v in before.items() if k not in ("label", "note")}
    event = next(data for kind, data in updated.result() if kind == "run.updated")
    assert event == {"run_id": run_id, "session_id": session, "fields": ["label", "note"],
                     "label": "baseline", "note": "first try"}
    listed = (await api.ok("GET", f"sessions/{session}/runs"))["runs"]
    assert [(r["label"], r["note"]) for r in listed] == [("baseline", "first try")]
    # null clears; a field not given is kept.
    run = await api.ok("PATCH", f"runs/{run_id}", {"label": None})
    assert run["label"] is None and run["note"] == "first try"
    assert (await api.run(run_id))["label"] is None


async def test_the_active_run_takes_a_label_and_keeps_running(api: Api) -> None:
    session = await api.session()
    run_id = await api.start_run(session, "slow")
    await api.first_output(run_id)
    run = await api.ok("PATCH", f"runs/{run_id}", {"label": "long one"})
    assert run["label"] == "long one" and run["status"] == "running"
    await api.ok("DELETE", f"runs/{run_id}")
    ended = await api.wait_status(run_id)
    assert ended["status"] == "cancelled" and ended["label"] == "long one"


async def test_session_title_and_metadata_edit(api: Api) -> None:
    session = await api.session()
    async with project_events(api, lambda kind, _: kind == "session.updated") as updated:
        doc = await api.ok("PATCH", f"sessions/{session}",
                           {"title": "renamed", "metadata": {"team": "a", "api_key": "s3cret"}})
    assert doc["id"] == session and doc["title"] == "renamed"
    assert doc["metadata"]["team"] == "a" and doc["metadata"]["api_key"] != "s3cret"
    event = next(data for kind, data in updated.result() if kind == "session.updated")
    assert event["session_id"] == session and event["fields"] == ["metadata", "title"]
    listed = (await api.ok("GET", "sessions"))["sessions"]
    assert [(s["title"], s["metadata"]) for s in listed if s["id"] == session] == \
        [("renamed", doc["metadata"])]
    # Only what is given changes.
    doc = await api.ok("PATCH", f"sessions/{session}", {"title": "again"})
    assert doc["title"] == "again" and doc["metadata"]["team"] == "a"


async def test_sessions_made_and_deleted_elsewhere_are_announced(api: Api) -> None:
    # Another client (the CLI, a second tab) makes a session: a page learns of it live.
    async with project_events(api, lambda kind, _: kind == "session.created") as created:
        doc = await api.ok("POST", "sessions", {"title": "from elsewhere"}, 201)
    event = next(data for kind, data in created.result() if kind == "session.created")
    assert event == {"session_id": doc["id"], "session": doc}
    async with project_events(api, lambda kind, _: kind == "session.deleted") as deleted:
        await api.ok("DELETE", f"sessions/{doc['id']}")
    assert [data for kind, data in deleted.result() if kind == "session.deleted"] == \
        [{"session_id": doc["id"]}]
    # An import makes several at once: one event that names none.
    async with project_events(api, lambda kind, _: kind == "session.created") as imported:
        answer = await api.ok("POST", "bundles/import", {
            "format": "llamon.playground.bundle/1", "runs": [], "events": [], "blobs": {},
            "sessions": [{"id": f"e{n}", "title": f"e {n}", "created_at": "2026-01-01T00:00:00Z"}
                         for n in range(3)]}, 201)
    assert len(answer["sessions"]) == 3
    assert [data for kind, data in imported.result() if kind == "session.created"] == \
        [{"session_id": None, "session": None}]


async def test_an_edited_rerun_takes_what_a_new_run_may_carry(api: Api) -> None:
    # A rerun that replaces the parts carries a run's input, inline files included: the
    # front lets it through up to the same limit as a new run's (not a small JSON body's).
    session = await api.session()
    first = await api.start_run(session, "stream one")
    await api.wait_status(first)
    payload = bytes(range(256)) * (6 * 1024)  # 1.5 MiB: 2 MiB of base64, over 1 MiB
    parts = [text("stream two"), {"kind": "file", "name": "in.bin",
                                  "mime": "application/octet-stream",
                                  "bytes_base64": base64.b64encode(payload).decode()}]
    second = (await api.ok("POST", f"runs/{first}/rerun", {"parts": parts}, 202))["run_id"]
    rerun = await api.wait_status(second)
    assert rerun["status"] == "completed", rerun
    stored = rerun["input"]["parts"][1]
    assert stored["size"] == len(payload)
    assert stored["sha256"] == hashlib.sha256(payload).hexdigest()


async def test_rerun_with_a_body_replaces_what_it_gives(api: Api) -> None:
    session = await api.session()
    first = await api.start_run(session, "stream one two", metadata={"user": "u1"})
    original = await api.wait_status(first)
    assert original["edited"] is False and original["edited_fields"] == []
    second = (await api.ok("POST", f"runs/{first}/rerun",
                           {"parts": [text("stream three four")], "label": "edited"},
                           202))["run_id"]
    rerun = await api.wait_status(second)
    assert rerun["status"] == "completed", rerun
    assert rerun["rerun_of"] == first and rerun["label"] == "edited"
    assert rerun["edited"] is True and rerun["edited_fields"] == ["parts"]
    assert rerun["input"]["parts"] == [text("stream three four")]
    assert rerun["input"]["metadata"] == {"user": "u1"}  # cloned
    assert rerun["output"] == [text("three four")]
    # Only metadata: the parts are cloned.
    third = (await api.ok("POST", f"runs/{first}/rerun", {"metadata": {"user": "u2"}},
                          202))["run_id"]
    meta = await api.wait_status(third)
    assert meta["edited_fields"] == ["metadata"] and meta["input"]["metadata"] == {"user": "u2"}
    assert meta["input"]["parts"] == original["input"]["parts"]
    # No body: exactly as before, not edited.
    fourth = (await api.ok("POST", f"runs/{first}/rerun", None, 202))["run_id"]
    plain = await api.wait_status(fourth)
    assert plain["edited"] is False and plain["label"] is None
    assert plain["input"]["parts"] == original["input"]["parts"]
    # Same code for all of them, told apart by input only.
    assert original["code_fingerprint"] and len(original["code_fingerprint"]) == 64
    assert {r["code_fingerprint"] for r in (original, rerun, meta, plain)} == \
        {original["code_fingerprint"]}
    compared = await api.ok("GET", f"compare?left={first}&right={second}")
    assert compared["same_code"] is True
    assert compared["right"]["label"] == "edited" and compared["right"]["edited_fields"] == \
        ["parts"]


async def test_rerun_with_a_uri_file_never_downloads_it(api: Api) -> None:
    session = await api.session()
    first = await api.wait_status(await api.start_run(session, "stream x"))
    uri = {"kind": "file", "uri": "https://example.invalid/never.pdf", "name": "never.pdf"}
    second = (await api.ok("POST", f"runs/{first['id']}/rerun",
                           {"parts": [text("stream y"), uri]}, 202))["run_id"]
    rerun = await api.wait_status(second)
    stored = rerun["input"]["parts"][1]
    assert stored["availability"] == "external"
    assert stored["replay"] == "unavailable_for_replay"


async def test_lineage_chain_of_resumes_and_tree_of_reruns(api: Api) -> None:
    session = await api.session()
    ask = await api.start_run(session, "ask")
    await api.wait_status(ask)
    answer = (await api.ok("POST", f"runs/{ask}/resume", {"parts": [text("Ada")]},
                           202))["run_id"]
    child = await api.wait_status(answer)
    assert child["parent_run_id"] == ask and (await api.run(ask))["resumed_by"] == answer
    assert child["generation"] == 1
    rerun_a = (await api.ok("POST", f"runs/{ask}/rerun", {"label": "again"}, 202))["run_id"]
    await api.wait_status(rerun_a)
    rerun_b = (await api.ok("POST", f"runs/{rerun_a}/rerun", None, 202))["run_id"]
    await api.wait_status(rerun_b)

    lineage = await api.ok("GET", f"runs/{answer}/lineage")
    assert [r["id"] for r in lineage["resumes"]] == [ask, answer]
    assert lineage["resumes"][0]["resumed_by"] == answer
    assert lineage["reruns"] == {"run": lineage["resumes"][1], "reruns": []}

    lineage = await api.ok("GET", f"runs/{rerun_b}/lineage")
    tree = lineage["reruns"]
    assert tree["run"]["id"] == ask
    assert [n["run"]["id"] for n in tree["reruns"]] == [rerun_a]
    assert tree["reruns"][0]["run"]["label"] == "again"
    assert [n["run"]["id"] for n in tree["reruns"][0]["reruns"]] == [rerun_b]
    assert [r["id"] for r in lineage["resumes"]] == [rerun_b]
    assert lineage["truncated"] is False

    code, doc = await api.call("GET", "runs/run_missing/lineage")
    assert code == 404 and doc["detail"]["error"] == "run_not_found"


async def test_bundles_keep_labels_notes_and_edits(api: Api) -> None:
    session = await api.session()
    first = await api.wait_status(await api.start_run(session, "stream keep"))
    second = (await api.ok("POST", f"runs/{first['id']}/rerun",
                           {"parts": [text("stream kept")], "label": "v2"}, 202))["run_id"]
    await api.wait_status(second)
    await api.ok("PATCH", f"runs/{first['id']}", {"label": "v1", "note": "why"})
    await api.ok("PATCH", f"sessions/{session}", {"title": "bundled"})
    bundle = await api.ok("POST", "bundles/export", {"session_ids": [session]})
    mapping = await api.ok("POST", "bundles/import", {"bundle": bundle}, 201)
    new_first = await api.run(mapping["runs"][first["id"]])
    new_second = await api.run(mapping["runs"][second])
    assert (new_first["label"], new_first["note"]) == ("v1", "why")
    assert new_second["label"] == "v2" and new_second["edited_fields"] == ["parts"]
    assert new_second["rerun_of"] == new_first["id"]
    assert new_second["code_fingerprint"] == first["code_fingerprint"]
    sessions = {s["id"]: s for s in (await api.ok("GET", "sessions"))["sessions"]}
    assert sessions[mapping["sessions"][session]]["title"] == "bundled (imported)"


BAD_RUN_PATCHES = [
    ({"label": "x" * 201}, "invalid_label"),
    ({"note": "x" * 10_001}, "invalid_note"),
    ({"label": 5}, "invalid_label"),
    ({"note": ["a"]}, "invalid_note"),
    ({"status": "completed"}, "unknown_field"),
    ({"label": "ok", "output": []}, "unknown_field"),
    ([1], "invalid_request"),
]
BAD_SESSION_PATCHES = [
    ({"title": "x" * 501}, "invalid_title"),
    ({"title": None}, "invalid_title"),
    ({"metadata": "x"}, "invalid_metadata"),
    ({"context_id": "c"}, "unknown_field"),
]
BAD_RERUNS = [
    ({"parts": []}, "invalid_part"),
    ({"parts": "text"}, "invalid_part"),
    ({"metadata": []}, "invalid_metadata"),
    ({"changed_files": ["/etc/passwd"]}, "invalid_changed_files"),
    ({"revision": 5}, "invalid_revision"),
    ({"label": "ok", "surprise": 1}, "unknown_field"),
    ({"label": "x" * 201}, "invalid_label"),
    ({"metadata": {"llamon.playground": {}}}, "reserved_metadata_key"),
]


async def test_bad_edits_are_refused_and_change_nothing(api: Api, daemon: Stack) -> None:
    session = await api.session()
    run_id = await api.start_run(session, "stream untouched")
    await api.wait_status(run_id)
    await api.ok("PATCH", f"runs/{run_id}", {"label": "kept", "note": "kept"})
    run_before = await api.run(run_id)
    sessions_before = await api.ok("GET", "sessions")
    rows_before = counts(daemon)
    cases = ([("PATCH", f"runs/{run_id}", body, code) for body, code in BAD_RUN_PATCHES]
             + [("PATCH", f"sessions/{session}", body, code)
                for body, code in BAD_SESSION_PATCHES]
             + [("POST", f"runs/{run_id}/rerun", body, code) for body, code in BAD_RERUNS]
             + [("PATCH", "runs/run_missing", {"label": "x"}, "run_not_found"),
                ("PATCH", "sessions/ses_missing", {"title": "x"}, "session_not_found"),
                ("POST", "runs/run_missing/rerun", {"label": "x"}, "run_not_found")])
    for method, path, body, code in cases:
        status, doc = await api.call(method, path, body)
        assert 400 <= status < 500 and doc["detail"]["error"] == code, (path, body, doc)
        assert doc["detail"]["message"]
    assert await api.run(run_id) == run_before
    assert await api.ok("GET", "sessions") == sessions_before
    assert counts(daemon) == rows_before
