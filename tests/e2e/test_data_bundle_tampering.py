"""Every tampered bundle is refused with a clear 4xx and leaves the database and the file
store byte-identical. Each tampered bundle also carries a new, valid blob, so an
import that wrote anything before refusing would show up in the file store."""

from __future__ import annotations

import asyncio
import base64
import copy
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from tests.e2e.data_support import (
    b64,
    finished_run,
    inline_file,
    post_big,
    settled_snapshot,
    sha,
    snapshot,
    text,
)
from tests.support.api import Api
from tests.support.procs import Stack
from tests.support.waiting import eventually

Bundle = dict[str, Any]
MIB = 1024 * 1024


def add_file(bundle: Bundle, data: bytes, *, size: int | None = None) -> str:
    """Reference `data` from the first run's input and carry it as a blob."""
    digest = sha(data)
    bundle["runs"][0]["input"]["parts"].append(
        {"kind": "file", "sha256": digest, "size": len(data), "name": "new.bin",
         "mime": "application/octet-stream", "source": "input"})
    bundle["blobs"][digest] = {"bytes_base64": b64(data), "size": len(data) if size is None
                               else size}
    return digest


def nested(depth: int) -> Any:
    value: Any = {}
    for _ in range(depth):
        value = {"k": value}
    return value


def first_blob(bundle: Bundle) -> dict[str, Any]:
    return next(iter(bundle["blobs"].values()))


def wrong_hash(b: Bundle) -> None:
    blob = first_blob(b)
    data = bytearray(base64.b64decode(blob["bytes_base64"]))
    data[0] ^= 0xFF
    blob["bytes_base64"] = b64(bytes(data))


def wrong_blob_size(b: Bundle) -> None:
    digest = add_file(b, b"sized wrong", size=99)
    b["runs"][0]["input"]["parts"][-1]["size"] = 99
    assert b["blobs"][digest]["size"] == 99


def wrong_part_size(b: Bundle) -> None:
    b["runs"][0]["input"]["parts"][1]["size"] += 1


def cycle(b: Bundle) -> None:
    parent, child = b["runs"][1], b["runs"][2]
    parent["parent_run_id"] = child["id"]


TAMPERING: list[tuple[str, Callable[[Bundle], None], int, str]] = [
    ("wrong hash", wrong_hash, 400, "blob_hash_mismatch"),
    ("wrong blob size", wrong_blob_size, 400, "blob_size_mismatch"),
    ("wrong part size", wrong_part_size, 400, "blob_size_mismatch"),
    ("dangling run->session", lambda b: b["runs"][0].update(session_id="ses_gone"), 400,
     "dangling_reference"),
    ("dangling parent", lambda b: b["runs"][2].update(parent_run_id="run_gone"), 400,
     "dangling_reference"),
    ("event of an unknown run", lambda b: b["events"].append(
        {**b["events"][0], "run_id": "run_gone"}), 400, "dangling_reference"),
    ("file part without its blob", lambda b: b["blobs"].pop(
        b["runs"][0]["input"]["parts"][1]["sha256"]), 400, "missing_blob"),
    ("bad base64", lambda b: first_blob(b).update(bytes_base64="!!not base64!!"), 400,
     "invalid_base64"),
    ("wrong format", lambda b: b.update(format="llamon.playground.bundle/2"), 400,
     "unsupported_bundle_format"),
    ("no format", lambda b: b.pop("format"), 400, "unsupported_bundle_format"),
    ("deep data part", lambda b: b["runs"][0]["input"]["parts"].append(
        {"kind": "data", "data": nested(100)}), 400, "nesting_too_deep"),
    ("deep metadata", lambda b: b["sessions"][0].update(metadata=nested(70)), 400,
     "nesting_too_deep"),
    ("deep event payload", lambda b: b["events"][0]["payload"].update(x=nested(70)), 400,
     "nesting_too_deep"),
    ("data part not an object", lambda b: b["runs"][0]["input"]["parts"].append(
        {"kind": "data", "data": [1]}), 400, "invalid_bundle"),
    ("unknown status", lambda b: b["runs"][0].update(status="paused"), 400, "invalid_bundle"),
    # An event's kind goes into its stored SSE frame as it is: no line break or quote.
    ("event kind breaking its frame", lambda b: b["events"][0].update(
        kind='run.status\ndata: "x'), 400, "invalid_bundle"),
    ("duplicate run id", lambda b: b["runs"].append(copy.deepcopy(b["runs"][0])), 400,
     "invalid_bundle"),
    ("parent cycle", cycle, 400, "invalid_bundle"),
    ("label too long", lambda b: b["runs"][0].update(label="x" * 201), 400, "invalid_bundle"),
    ("edited_fields not a list", lambda b: b["runs"][0].update(edited_fields="parts"), 400,
     "invalid_bundle"),
    ("unknown field", lambda b: b.update(extra=1), 400, "invalid_bundle"),
    ("blob key not a sha256", lambda b: b["blobs"].update({"abc": first_blob(b)}), 400,
     "invalid_bundle"),
    # The same limits as the API: a bundle may not bring in what a request could not.
    ("session metadata over its limit", lambda b: b["sessions"][0].update(
        metadata={f"k{i}": "-" * 60_000 for i in range(5)}), 413, "metadata_too_large"),
    ("a metadata value over its limit", lambda b: b["runs"][0]["input"].update(
        metadata={"note": "-" * 65_535}), 413, "metadata_too_large"),
    ("a capture event naming a long node", lambda b: b["events"][0].update(
        kind="trace", payload={"type": "node.start", "node": "n" * 257}), 400,
     "name_too_long"),
    ("too many blobs", lambda b: b["blobs"].update(
        {sha(str(i).encode()): {"bytes_base64": b64(str(i).encode()), "size": len(str(i))}
         for i in range(10_001)}), 413, "bundle_too_large"),
]


async def make_bundle(api: Api) -> Bundle:
    """Three real runs: one with an inline file, and an input_required parent + its child."""
    session = await api.session()
    await finished_run(api, session, [text("stream with a file"),
                                      inline_file(b"original file\n", "f.txt")])
    asked = await finished_run(api, session, [text("ask")])
    answer = await api.ok("POST", f"runs/{asked['id']}/resume", {"parts": [text("Ann")]}, 202)
    await api.wait_status(answer["run_id"])
    bundle: Bundle = await api.ok("POST", "bundles/export", {"session_ids": [session]})
    assert [r["parent_run_id"] is not None for r in bundle["runs"]] == [False, False, True]
    return bundle


async def test_each_tampering_is_refused_and_nothing_is_written(api: Api,
                                                               daemon: Stack) -> None:
    bundle = await make_bundle(api)
    before = await settled_snapshot(daemon)
    for name, tamper, status, code in TAMPERING:
        tampered = copy.deepcopy(bundle)
        add_file(tampered, f"a new blob for {name}".encode())
        tamper(tampered)
        got, doc = await post_big(api, "bundles/import", {"bundle": tampered})
        assert (got, doc["detail"]["error"]) == (status, code), (name, doc)
        assert doc["detail"]["message"], name
        assert snapshot(daemon) == before, name

    for name, raw, status, code in [
            ("100k-deep nesting", b'{"bundle": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", 400,
             "invalid_json"),
            ("not JSON", b"{nope", 400, "invalid_json"),
            ("not an object", b"[1, 2]", 400, "invalid_bundle"),
            ("empty body", b"", 400, "invalid_bundle")]:
        got, doc = await post_big(api, "bundles/import", raw)
        assert (got, doc["detail"]["error"]) == (status, code), (name, doc)
        assert snapshot(daemon) == before, name

    # The untampered bundle still imports: the refusals were about the tampering.
    await api.ok("POST", "bundles/import", bundle, 201)


async def test_an_oversized_blob_is_413_and_nothing_is_written(direct: Api,
                                                               daemon: Stack) -> None:
    bundle = await make_bundle(direct)
    before = await settled_snapshot(daemon)
    # One blob may take the bundle's whole blob allowance (160 MiB); one that says it is
    # larger is refused before anything is decoded.
    add_file(bundle, os.urandom(1024), size=160 * MIB + 1)
    got, doc = await post_big(direct, "bundles/import", bundle)
    assert (got, doc["detail"]["error"]) == (413, "blob_too_large"), doc
    assert snapshot(daemon) == before


async def test_a_body_over_the_import_limit_is_413_before_it_is_read(direct: Api,
                                                                     daemon: Stack) -> None:
    await direct.session()  # the database exists
    before = await settled_snapshot(daemon)
    reader, writer = await asyncio.open_unix_connection(str(daemon.settings.socket_path))
    try:
        writer.write(b"POST /api/playground/v1/bundles/import HTTP/1.1\r\nHost: daemon\r\n"
                     b"Content-Type: application/json\r\n"
                     b"Content-Length: %d\r\n\r\n{" % (256 * MIB + 1))
        await writer.drain()
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
        assert head.startswith(b"HTTP/1.1 413")
        length = int(next(line.split(b":")[1] for line in head.split(b"\r\n")
                          if line.lower().startswith(b"content-length")))
        doc = orjson.loads(await reader.readexactly(length))
        assert doc["detail"]["error"] == "payload_too_large"
    finally:
        writer.close()
    assert snapshot(daemon) == before


def peak_rss(pid: int) -> int:
    """The process's peak resident set so far (VmHWM), in bytes."""
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line.split()[1] for line in status.splitlines()
                    if line.startswith("VmHWM:"))) * 1024


async def test_a_bundle_of_too_many_values_is_413_before_it_is_parsed(direct: Api,
                                                                      daemon: Stack) -> None:
    """Two million empty events: 6 MB of JSON that would take ~200 MB once parsed. The
    413 comes from the bytes, so the daemon's peak memory stays a small multiple of them."""
    await direct.session()
    assert daemon.daemon is not None
    # The idle writer checkpoints that write a second later: the snapshot comes after it
    # (else a slow import makes the checkpoint look like a write of its own).
    wal = daemon.settings.db_path.with_name(daemon.settings.db_path.name + "-wal")
    await eventually(lambda: wal.exists() and wal.stat().st_size,
                     lambda size: not size, "the idle WAL checkpoint")
    before, peak_before = await settled_snapshot(daemon), peak_rss(daemon.daemon.pid)
    raw = (b'{"format":"llamon.playground.bundle/1","sessions":[],"runs":[],"blobs":{},'
           b'"events":[' + b",".join([b"{}"] * 2_000_001) + b"]}")
    got, doc = await post_big(direct, "bundles/import", raw)
    assert (got, doc["detail"]["error"]) == (413, "bundle_too_large"), doc
    assert peak_rss(daemon.daemon.pid) - peak_before < 5 * len(raw)
    assert "JSON values" in doc["detail"]["message"]
    assert snapshot(daemon) == before


async def test_an_import_whose_transaction_fails_takes_its_blobs_back(api: Api,
                                                                      daemon: Stack) -> None:
    """A bundle that passes validation but whose rows cannot be written (a trigger makes the
    events insert fail): the blobs it had written are removed again, no row stays."""
    bundle = await make_bundle(api)
    new_blob = add_file(bundle, b"written, then taken back")
    await settled_snapshot(daemon)  # the daemon's own housekeeping first
    conn = sqlite3.connect(daemon.settings.db_path, timeout=10)
    try:
        with conn:
            conn.execute("CREATE TRIGGER refuse_events BEFORE INSERT ON events "
                         "BEGIN SELECT RAISE(ABORT, 'refused by the test'); END")
    finally:
        conn.close()
    before = snapshot(daemon)
    got, doc = await post_big(api, "bundles/import", bundle)
    assert got == 503 and doc["detail"]["error"] == "history_unavailable", doc
    assert str(daemon.project) not in doc["detail"]["message"], doc
    assert not (daemon.settings.files_dir / new_blob).exists()
    after = snapshot(daemon)
    # Rows and files are as they were. The WAL is not compared here: SQLite's rollback of
    # the import's savepoint still appends frames (holding the unchanged page images) when
    # the writer's batch commits.
    assert (after["rows"], after["files"]) == (before["rows"], before["files"])
