"""Bundles: a round trip between two project folders, what export selects, and
imports of non-terminal runs; tampering is in test_data_bundle_tampering.py."""

from __future__ import annotations

import copy
import sqlite3
from pathlib import Path
from typing import Any

from tests.e2e.data_support import b64, blob_names, finished_run, inline_file, serving, sha, text
from tests.support.api import Api
from tests.support.procs import Stack, copy_example

FORMAT = "llamon.playground.bundle/1"


def normalized(bundle: dict[str, Any], ids: dict[str, str]) -> dict[str, Any]:
    """The bundle with IDs renamed by `ids`, event seqs and per-export fields dropped, a
    title's import mark too."""
    def rename(value: Any) -> Any:
        return ids.get(value, value) if isinstance(value, str) else value

    sessions = [{**s, "id": rename(s["id"]), "context_id": None,
                 "title": s["title"].removesuffix(" (imported)")} for s in bundle["sessions"]]
    runs = [{**r, **{k: rename(r[k]) for k in ("id", "session_id", "parent_run_id",
                                               "rerun_of", "resumed_by")}}
            for r in bundle["runs"]]
    events = [{**e, "run_id": rename(e["run_id"]), "seq": None} for e in bundle["events"]]
    return {"format": bundle["format"], "sessions": sessions, "runs": runs, "events": events,
            "blobs": bundle["blobs"]}


async def test_bundle_round_trip_across_two_project_folders(api: Api, daemon: Stack,
                                                            tmp_path: Path) -> None:
    shared, own = b"shared bytes\n", b"\x00only in the first run\xff"
    first = await api.session()
    await finished_run(api, first, [text("stream a b c"), inline_file(shared, "s.bin"),
                                    inline_file(own, "o.bin")], metadata={"userId": "u-1"})
    await finished_run(api, first, [text("data"), {"kind": "data", "data": {"q": [1, {"x": 2}]}}])
    asked = await finished_run(api, first, [text("ask")])
    assert asked["status"] == "input_required"
    answer = await api.ok("POST", f"runs/{asked['id']}/resume", {"parts": [text("Bob")]}, 202)
    child = await api.wait_status(answer["run_id"])
    assert child["output"] == [text("Hello, Bob!")]
    second = await api.session()
    await finished_run(api, second, [text("stream again"), inline_file(shared, "s2.bin")])

    bundle = await api.ok("POST", "bundles/export", {})
    assert bundle["format"] == FORMAT and "user content" in bundle["privacy_warning"]
    assert len(bundle["sessions"]) == 2 and len(bundle["runs"]) == 5
    hello = b"hello from echo_agent\n"
    assert bundle["blobs"] == {sha(d): {"bytes_base64": b64(d), "size": len(d)}
                               for d in (shared, own, hello)}  # each blob once
    assert {e["run_id"] for e in bundle["events"]} == {r["id"] for r in bundle["runs"]}

    other = copy_example(tmp_path / "other")
    async with serving(other) as (stack, remote):
        mapping = await remote.ok("POST", "bundles/import", {"bundle": bundle}, 201)
        assert set(mapping["sessions"]) == {first, second}
        assert set(mapping["runs"]) == {r["id"] for r in bundle["runs"]}
        assert not set(mapping["runs"].values()) & set(mapping["runs"])  # fresh IDs
        # An imported session is told apart from the one it copies by its title.
        titles = {s["id"]: s["title"] for s in (await remote.ok("GET", "sessions"))["sessions"]}
        assert {titles[new] for new in mapping["sessions"].values()} == {"t (imported)"}
        assert blob_names(stack.settings.files_dir) == set(bundle["blobs"])
        for digest, blob in bundle["blobs"].items():
            async with remote.http.get(f"/api/playground/v1/files/{digest}") as resp:
                assert resp.status == 200 and len(await resp.read()) == blob["size"]
        imported_child = await remote.run(mapping["runs"][child["id"]])
        assert imported_child["parent_run_id"] == mapping["runs"][asked["id"]]
        assert (await remote.run(mapping["runs"][asked["id"]]))["resumed_by"] == \
            imported_child["id"]
        events = await remote.events(imported_child["id"])  # SSE replays and closes
        assert events[-1].data["status"] == "completed"

        again = await remote.ok("POST", "bundles/export", {})
    ids = {**mapping["sessions"], **mapping["runs"]}
    assert normalized(again, {}) == normalized(bundle, ids)


# These two share the module's daemon: each exports only its own runs and sessions.
async def test_export_of_a_run_brings_its_ancestors_and_session_only(module_api: Api) -> None:
    api = module_api
    session = await api.session()
    await finished_run(api, session, [text("stream unrelated")])
    asked = await finished_run(api, session, [text("ask")])
    answer = await api.ok("POST", f"runs/{asked['id']}/resume", {"parts": [text("Al")]}, 202)
    child = await api.wait_status(answer["run_id"])
    elsewhere = await api.session()

    bundle = await api.ok("POST", "bundles/export", {"run_ids": [child["id"]]})
    assert [r["id"] for r in bundle["runs"]] == [asked["id"], child["id"]]
    assert [s["id"] for s in bundle["sessions"]] == [session]
    by_session = await api.ok("POST", "bundles/export", {"session_ids": [elsewhere]})
    assert [s["id"] for s in by_session["sessions"]] == [elsewhere] and by_session["runs"] == []
    for body, code in [({"run_ids": ["run_nope"]}, "run_not_found"),
                       ({"session_ids": ["ses_nope"]}, "session_not_found")]:
        status, doc = await api.call("POST", "bundles/export", body)
        assert status == 404 and doc["detail"]["error"] == code
    for junk in [{"run_ids": "run_x"}, {"surprise": []}, [1]]:
        status, doc = await api.call("POST", "bundles/export", junk)
        assert status == 400 and doc["detail"]["error"] in ("invalid_request", "unknown_field")


async def test_an_imported_run_is_never_active(module_api: Api) -> None:
    api = module_api
    session = await api.session()
    run = await finished_run(api, session, [text("stream hi")])
    bundle = await api.ok("POST", "bundles/export", {"run_ids": [run["id"]]})
    running = copy.deepcopy(bundle)
    running["runs"][0].update(status="running", ended_at=None)
    running["events"] = [e for e in running["events"]
                         if e["kind"] != "run.status" or e["payload"]["status"] == "queued"]
    mapping = await api.ok("POST", "bundles/import", running, 201)  # the bundle itself
    imported = await api.run(mapping["runs"][run["id"]])
    assert imported["status"] == "interrupted" and imported["reason"] == "imported"
    assert imported["ended_at"]
    events = await api.events(imported["id"])  # ends: the import wrote the terminal status
    assert events[-1].data == {**events[-1].data, "status": "interrupted", "reason": "imported",
                               "previous": "running"}
    health = await api.ok("GET", "/health")
    assert health["active_run_id"] is None
    # A new run can start: the import claimed no lock.
    await finished_run(api, session, [text("stream still free")])


async def test_a_newer_database_is_409_and_never_modified(tmp_path: Path) -> None:
    project = copy_example(tmp_path)
    db = project / ".llamon" / "playground" / "playground.sqlite3"
    db.parent.mkdir(parents=True)
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE from_the_future (x)")
    conn.execute("PRAGMA user_version = 99")
    conn.close()
    before = db.read_bytes()
    empty = {"format": FORMAT, "sessions": [], "runs": [], "events": [], "blobs": {}}
    async with serving(project) as (_, direct):
        for method, path, body in [("POST", "bundles/import", {"bundle": empty}),
                                   ("POST", "bundles/export", {}),
                                   ("DELETE", "sessions", None),
                                   ("GET", "compare?left=run_a&right=run_b", None),
                                   ("GET", f"files/{'0' * 64}", None)]:
            code, doc = await direct.call(method, path, body)
            assert code == 409, (path, doc)
            assert doc["detail"]["error"] == "unsupported_database_version"
    assert db.read_bytes() == before
    assert not db.with_name(db.name + "-wal").exists()
