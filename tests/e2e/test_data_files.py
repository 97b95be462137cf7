"""Files: inline input and Host output in the blob store, served back as
attachments; a URI is never fetched, by the run, compare, export or import."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.e2e.data_support import (
    blob_names,
    finished_run,
    inline_file,
    make_spy_project,
    post_big,
    serving,
    sha,
    spy_records,
    text,
)
from tests.support.api import Api
from tests.support.procs import Stack, copy_example


# One daemon for the module: each test reads only the session it made (a daemon, a front
# and a Host start per test would cost about a second each).
@pytest.fixture
def daemon(module_daemon: Stack) -> Stack:
    return module_daemon


@pytest.fixture
def api(module_api: Api) -> Api:
    return module_api


async def test_inline_file_round_trip_through_the_files_route(api: Api, daemon: Stack) -> None:
    payload = bytes(range(256)) * 40 + b"<script>alert(1)</script>"
    session = await api.session()
    run = await finished_run(api, session, [
        text("stream with a file"),
        inline_file(payload, name="report <v1> é.html", mime="text/html")])
    part = run["input"]["parts"][1]
    assert part == {"kind": "file", "sha256": sha(payload), "size": len(payload),
                    "name": "report <v1> é.html", "mime": "text/html", "source": "input"}
    blob = daemon.settings.files_dir / part["sha256"]
    inode = blob.stat().st_ino
    async with api.http.get(f"/api/playground/v1/files/{part['sha256']}") as resp:
        assert resp.status == 200
        assert await resp.read() == payload
        assert resp.headers["Content-Type"] == "text/html"
        disposition = resp.headers["Content-Disposition"]
        assert disposition.startswith("attachment;")  # never rendered inline
        assert "filename*=UTF-8''report%20%3Cv1%3E%20%C3%A9.html" in disposition
    # The same bytes again: the existing blob is reused, never rewritten.
    await finished_run(api, session, [text("stream again"), inline_file(payload, name="b")])
    assert blob.stat().st_ino == inode and blob.read_bytes() == payload


async def test_host_file_output_is_served_with_its_mime_and_name(api: Api) -> None:
    session = await api.session()
    run = await finished_run(api, session, [text("data")])
    local = run["output"][1]
    async with api.http.get(f"/api/playground/v1/files/{local['sha256']}") as resp:
        assert resp.status == 200 and await resp.read() == b"hello from echo_agent\n"
        assert resp.headers["Content-Type"].startswith("text/plain")
        assert resp.headers["Content-Disposition"].startswith('attachment; filename="hello.txt"')


async def test_unknown_or_malformed_file_ids_are_404(api: Api) -> None:
    await api.session()
    for file_id in ["0" * 64, "NOT-A-HASH", "a" * 63, "A" * 64]:
        code, doc = await api.call("GET", f"files/{file_id}")
        assert code == 404 and doc["detail"]["error"] == "file_not_found", (file_id, doc)


async def test_an_oversized_inline_file_is_413_and_writes_nothing(api: Api,
                                                                  daemon: Stack) -> None:
    session = await api.session()
    before = blob_names(daemon.settings.files_dir)
    code, doc = await post_big(api, f"sessions/{session}/runs", {
        "parts": [text("x"), inline_file(os.urandom(10 * 1024 * 1024 + 1))]})
    assert code == 413 and doc["detail"]["error"] == "file_too_large"
    assert blob_names(daemon.settings.files_dir) == before
    assert (await api.ok("GET", f"sessions/{session}/runs"))["runs"] == []


@pytest.fixture
async def loopback_listener() -> AsyncIterator[tuple[str, list[bytes]]]:
    """A TCP listener on 127.0.0.1 that records every connection it ever accepts."""
    hits: list[bytes] = []

    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        hits.append(await reader.read(200))
        writer.close()
    server = await asyncio.start_server(accept, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    yield f"http://127.0.0.1:{port}/private/report.pdf?sig=abc", hits
    server.close()
    await server.wait_closed()


async def test_a_uri_file_is_never_fetched(tmp_path: Path,
                                           loopback_listener: tuple[str, list[bytes]]) -> None:
    uri, hits = loopback_listener
    project = make_spy_project(copy_example(tmp_path))
    async with serving(project) as (_stack, api):
        session = await api.session()
        run = await finished_run(api, session, [
            text("stream look at this"),
            {"kind": "file", "uri": uri, "name": "report.pdf", "mime": "application/pdf"}])
        assert run["status"] == "completed"
        assert run["input"]["parts"][1] == {
            "kind": "file", "uri": uri, "name": "report.pdf", "mime": "application/pdf",
            "availability": "external", "replay": "unavailable_for_replay"}
        # The Host got the URI itself, not the file.
        sent = spy_records(project)[-1]["parts"][1]
        assert sent["url"] == uri and "raw" not in sent
        other = await finished_run(api, session, [text("stream other")])
        await api.ok("GET", f"compare?left={run['id']}&right={other['id']}")
        bundle = await api.ok("POST", "bundles/export", {"run_ids": [run["id"]]})
        assert bundle["blobs"] == {}
        mapping = await api.ok("POST", "bundles/import", {"bundle": bundle}, 201)
        imported = await api.run(mapping["runs"][run["id"]])
        assert imported["input"]["parts"][1]["uri"] == uri
    assert hits == []
