"""Bad input gets a clear 4xx with {"detail": {"error", "message"}} and writes nothing."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from tests.support.api import Api
from tests.support.procs import Stack


def counts(stack: Stack) -> tuple[int, int, int, int]:
    """Sessions, runs, events and run files in history. An ended run's events move into
    blocks once the writer is quiet (the compactor, in one transaction): both are counted,
    so the figure does not change under a test that reads it before and after."""
    conn = sqlite3.connect(stack.settings.db_path)
    try:
        def one(sql: str) -> int:
            return int(conn.execute(sql).fetchone()[0])

        return (one("SELECT COUNT(*) FROM sessions"), one("SELECT COUNT(*) FROM runs"),
                one("SELECT COUNT(*) FROM events")
                + one("SELECT coalesce(SUM(events), 0) FROM event_blocks"),
                one("SELECT COUNT(*) FROM run_files"))
    finally:
        conn.close()


def blobs(stack: Stack) -> list[str]:
    return sorted(p.name for p in stack.settings.files_dir.iterdir())


BAD_RUN_BODIES = [
    (b"not json", 400, "invalid_json"),
    (b"[1, 2]", 400, "invalid_request"),
    (b'{"parts": "text"}', 400, "invalid_part"),
    (b'{"parts": []}', 400, "invalid_part"),
    (b'{"parts": [{"kind": "image", "text": "x"}]}', 400, "invalid_part"),
    (b'{"parts": [{"kind": "text"}]}', 400, "invalid_part"),
    (b'{"parts": [{"kind": "data", "data": [1]}]}', 400, "invalid_part"),
    (b'{"parts": [{"kind": "file", "bytes_base64": "!!notbase64"}]}', 400, "invalid_base64"),
    (b'{"parts": [{"kind": "text", "text": "x"}], "changed_files": ["/etc/passwd"]}', 400,
     "invalid_changed_files"),
    (b'{"parts": [{"kind": "text", "text": "x"}], "changed_files": ["app/../../x.py"]}', 400,
     "invalid_changed_files"),
    (b'{"parts": [{"kind": "text", "text": "x"}], "changed_files": "app/x.py"}', 400,
     "invalid_changed_files"),
    (b'{"parts": [{"kind": "text", "text": "x"}], "metadata": []}', 400, "invalid_metadata"),
    (b'{"parts": [{"kind": "text", "text": "x"}], "metadata": {"llamon.playground": {}}}', 400,
     "reserved_metadata_key"),
    (b'{"parts": [{"kind": "text", "text": "x"}], "surprise": 1}', 400, "unknown_field"),
    (b'{"parts": [{"kind": "text", "text": "x", "txet": "typo"}]}', 400, "unknown_field"),
    (b'{"parts": [{"kind": "file", "uri": "https://x/y", "mimetype": "a/b"}]}', 400,
     "unknown_field"),
    (b'{"parts": [{"kind": "text", "text": "x"}], "revision": 5}', 400, "invalid_revision"),
    (b'{"parts": [{"kind": "data", "data": {"n": 123456789012345678901}}]}', 400,
     "invalid_json"),  # beyond 64 bits: refused, not silently rounded
    (b'{"parts": [{"kind": "data", "data": {"n": -9223372036854775809}}]}', 400,
     "invalid_json"),  # 19 digits, one below int64: refused too, not rounded
    (b'{"parts": [{"kind": "data", "data": {"n": 1' + b"0" * 400 + b'}}]}', 400,
     "invalid_json"),
]


# One daemon for the refusals (the bodies here, the 404s and session bodies below): each
# counts the rows and blobs right before and after its own requests, and nothing else
# writes meanwhile. The tests that need an empty history or change the project keep their own.
@pytest.mark.parametrize(("raw", "status", "code"), BAD_RUN_BODIES)
async def test_bad_run_body_is_refused_and_writes_nothing(module_api: Api, module_daemon: Stack,
                                                         raw: bytes, status: int,
                                                         code: str) -> None:
    api, daemon = module_api, module_daemon
    session = await api.session()
    before, files_before = counts(daemon), blobs(daemon)
    got, doc = await api.call("POST", f"sessions/{session}/runs", raw=raw)
    assert got == status, doc
    assert doc["detail"]["error"] == code and doc["detail"]["message"]
    assert counts(daemon) == before and blobs(daemon) == files_before


async def test_unknown_session_and_run_are_404(module_api: Api, module_daemon: Stack) -> None:
    api, daemon = module_api, module_daemon
    await api.session()
    before = counts(daemon)
    body = {"parts": [{"kind": "text", "text": "x"}]}
    code, doc = await api.call("POST", "sessions/ses_nope/runs", body)
    assert code == 404 and doc["detail"]["error"] == "session_not_found"
    for method, path in [("GET", "runs/run_nope"), ("DELETE", "runs/run_nope"),
                         ("POST", "runs/run_nope/rerun"), ("GET", "sessions/ses_nope/runs"),
                         ("DELETE", "sessions/ses_nope")]:
        code, doc = await api.call(method, path, {} if method == "POST" else None)
        assert code == 404, (method, path, doc)
    code, doc = await api.call("POST", "runs/run_nope/resume", body)
    assert code == 404 and doc["detail"]["error"] == "run_not_found"
    code, doc = await api.call("GET", "no/such/route")
    assert code == 404 and doc["detail"]["error"] == "not_found"
    assert counts(daemon) == before


async def test_bad_session_body(module_api: Api, module_daemon: Stack) -> None:
    api, daemon = module_api, module_daemon
    await api.session()
    before = counts(daemon)
    for raw, code in [(b'{"title": 5}', "invalid_title"), (b'{"metadata": 1}', "invalid_metadata"),
                      (b'{"x": 1}', "unknown_field"), (b"{", "invalid_json")]:
        status, doc = await api.call("POST", "sessions", raw=raw)
        assert status == 400 and doc["detail"]["error"] == code
    assert counts(daemon) == before


async def test_delete_session_holding_the_active_run_is_409(api: Api, daemon: Stack) -> None:
    session = await api.session()
    run_id = await api.start_run(session, "slow")
    code, doc = await api.call("DELETE", f"sessions/{session}")
    assert code == 409 and doc["detail"]["active_run_id"] == run_id
    await api.ok("DELETE", f"runs/{run_id}")
    assert (await api.ok("DELETE", f"sessions/{session}"))["deleted"] == session
    assert counts(daemon) == (0, 0, 0, 0)


async def test_inline_file_input_reaches_the_blob_store(api: Api, daemon: Stack) -> None:
    import base64
    import hashlib
    session = await api.session()
    payload = b"\x00\x01 inline bytes"
    body = {"parts": [{"kind": "text", "text": "stream with a file"},
                      {"kind": "file", "name": "in.bin", "mime": "application/octet-stream",
                       "bytes_base64": base64.b64encode(payload).decode()}]}
    run_id = (await api.ok("POST", f"sessions/{session}/runs", body, 202))["run_id"]
    run = await api.wait_status(run_id)
    part = run["input"]["parts"][1]
    assert part == {"kind": "file", "sha256": hashlib.sha256(payload).hexdigest(),
                    "size": len(payload), "name": "in.bin", "mime": "application/octet-stream",
                    "source": "input"}
    assert (daemon.settings.files_dir / part["sha256"]).read_bytes() == payload
    assert "bytes_base64" not in str(run)


async def test_lists_are_paged_in_creation_order(api: Api) -> None:
    ids = [await api.session() for _ in range(5)]
    first = await api.ok("GET", "sessions?limit=2")
    assert [s["id"] for s in first["sessions"]] == ids[:2] and first["next_after"]
    rest = await api.ok("GET", f"sessions?limit=10&after={first['next_after']}")
    assert [s["id"] for s in rest["sessions"]] == ids[2:] and rest["next_after"] is None
    # Newest first, paged backwards from the newest session (what the page shows first).
    newest = await api.ok("GET", "sessions?limit=2&order=newest")
    assert [s["id"] for s in newest["sessions"]] == ids[:2:-1] and newest["next_after"]
    older = await api.ok("GET", f"sessions?order=newest&after={newest['next_after']}")
    assert [s["id"] for s in older["sessions"]] == ids[2::-1] and older["next_after"] is None
    code, doc = await api.call("GET", "sessions?order=sideways")
    assert code == 400 and doc["detail"]["error"] == "invalid_query"
    one = await api.ok("GET", f"sessions/{ids[3]}")
    assert one["id"] == ids[3] and one["title"] == newest["sessions"][1]["title"]
    code, doc = await api.call("GET", "sessions/ses_none")
    assert code == 404 and doc["detail"]["error"] == "session_not_found"
    for bad in ("limit=0", "limit=x", "after=-1", "limit=%C2%B2"):  # "²" is a digit to Python
        code, doc = await api.call("GET", f"sessions?{bad}")
        assert code == 400 and doc["detail"]["error"] == "invalid_query", bad
    runs = [await api.start_run(ids[0], f"stream r{i}") for i in range(1)]
    await api.wait_status(runs[0])
    for where in (f"runs/{runs[0]}/events?after=%C2%B2", "host/logs?after=%C2%B2"):
        code, doc = await api.call("GET", where)
        assert code == 400 and doc["detail"]["error"] in ("invalid_cursor", "invalid_query"), (
            where, code, doc)
    # Every paged route takes a page size in its range, and refuses one outside it.
    for route, top in (("sessions", 1000), (f"sessions/{ids[0]}/runs", 1000),
                       ("host/logs", 5000)):
        await api.ok("GET", f"{route}?limit={top}")
        for bad in (0, top + 1):
            code, doc = await api.call("GET", f"{route}?limit={bad}")
            assert code == 400 and doc["detail"]["error"] == "invalid_query", (route, bad)
    page = await api.ok("GET", f"sessions/{ids[0]}/runs?limit=1")
    assert [r["id"] for r in page["runs"]] == runs and page["next_after"] is None
    page = await api.ok("GET", f"sessions/{ids[0]}/runs?order=newest")
    assert [r["id"] for r in page["runs"]] == runs and page["next_after"] is None
    code, doc = await api.call("GET", f"sessions/{ids[0]}/runs?order=sideways")
    assert code == 400 and doc["detail"]["error"] == "invalid_query"


@pytest.mark.parametrize("way_out", ["dir_link", "file_link", "fifo", "loop"])
async def test_a_changed_file_leading_out_of_the_project_is_refused(
        api: Api, daemon: Stack, tmp_path: Path, way_out: str) -> None:
    """Nothing outside the project is hashed, compiled or recorded: a link whose target
    leaves it, or a path that is no regular file, is refused before a run exists."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "good.py").write_text("print('outside')\n")
    app = daemon.project / "app"
    names = {"dir_link": "link/good.py", "file_link": "app/passwd.py", "fifo": "app/pipe.py",
             "loop": "app/loop.py"}
    if way_out == "dir_link":
        (daemon.project / "link").symlink_to(outside)
    elif way_out == "file_link":
        (app / "passwd.py").symlink_to("/etc/passwd")
    elif way_out == "fifo":
        os.mkfifo(app / "pipe.py")
    else:
        (app / "loop.py").symlink_to(app / "loop.py")
    session = await api.session()
    before = counts(daemon)
    body = {"parts": [{"kind": "text", "text": "x"}], "changed_files": [names[way_out]]}
    got, doc = await api.call("POST", f"sessions/{session}/runs", body)
    assert (got, doc["detail"]["error"]) == (400, "invalid_changed_files"), doc
    assert names[way_out] in doc["detail"]["message"]
    # Paths in messages are the project's own, relative: never where the project lives.
    assert str(daemon.project) not in doc["detail"]["message"]
    assert str(daemon.project.resolve()) not in doc["detail"]["message"]
    assert counts(daemon) == before


async def test_a_link_inside_the_project_is_a_changed_file_like_any_other(
        api: Api, daemon: Stack) -> None:
    (daemon.project / "app" / "alias.py").symlink_to(daemon.project / "app" / "agent.py")
    session = await api.session()
    run_id = await api.start_run(session, "stream hi", changed_files=["app/alias.py"])
    run = await api.wait_status(run_id)
    assert run["status"] == "completed"
