"""Bundle import against a real SQLite store, in process: row order, event seqs."""

from __future__ import annotations

import base64
import binascii
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from llamon_playground.common.config import build_settings
from llamon_playground.daemon.data import bundle_validate
from llamon_playground.daemon.data.bundle_validate import (
    BUNDLE_FORMAT,
    MAX_BLOB_BYTES,
    _blob_sizes,
    decoded_chunks,
    validate_bundle,
)
from llamon_playground.daemon.data.json_depth import MAX_DEPTH
from llamon_playground.daemon.data.parts import parse_run_request
from llamon_playground.daemon.errors import BadRequest, PayloadTooLarge
from llamon_playground.daemon.runs.reconcile import IMPORTED_ENDING
from llamon_playground.daemon.store.blobs import BlobStore
from llamon_playground.daemon.store.bundles import import_bundle
from llamon_playground.daemon.store.database import Store
from llamon_playground.daemon.store.frames import build_frame
from llamon_playground.daemon.store.history import get_run
from llamon_playground.daemon.store.records import EventRecord


def bundle() -> dict[str, Any]:
    """A child run listed before its parent, with events of both."""
    def run(run_id: str, parent: str | None) -> dict[str, Any]:
        return {"id": run_id, "session_id": "s1", "status": "completed",
                "created_at": "2024-01-01T00:00:00.000Z", "context_id": "c",
                "parent_run_id": parent, "input": {"parts": [{"kind": "text", "text": "x"}]},
                "output": [], "scores": []}
    return {"format": BUNDLE_FORMAT,
            "sessions": [{"id": "s1", "title": "t", "created_at": "2024-01-01T00:00:00.000Z",
                          "metadata": {}}],
            "runs": [run("child", "parent"), run("parent", None)],
            "events": [{"seq": 7, "run_id": "child", "kind": "run.status",
                        "payload": {"status": "completed", "seq": 1, "run_id": "forged"}},
                       {"seq": 3, "run_id": "parent", "kind": "run.status",
                        "payload": {"status": "completed"}}],
            "blobs": {}}


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[tuple[Store, list[EventRecord]]]:
    settings = build_settings(tmp_path, {"LLAMON_PLAYGROUND_RUNTIME_DIR": str(tmp_path / "rt")})
    published: list[EventRecord] = []
    s = Store(settings, on_commit=lambda rows: published.extend(map(EventRecord.from_row, rows)))
    await s.open()
    yield s, published
    await s.close()


async def test_import_orders_parents_first_and_event_seqs_continue(
        store: tuple[Store, list[EventRecord]], tmp_path: Path) -> None:
    s, published = store
    s.append_event("run_before", "k", {})
    await s.flush()
    mapping = await import_bundle(s, BlobStore(tmp_path / "files"), bundle(), IMPORTED_ENDING)
    child = await get_run(s, mapping["runs"]["child"])
    assert child is not None and child["parent_run_id"] == mapping["runs"]["parent"]
    imported = await s.events_after(mapping["runs"]["child"], 0) + \
        await s.events_after(mapping["runs"]["parent"], 0)
    assert sorted(e.seq for e in imported) == [2, 3]
    # Imported in the bundle's seq order; the payload cannot forge the columns.
    parent_event = (await s.events_after(mapping["runs"]["parent"], 0))[0]
    assert parent_event.seq == 2
    child_event = (await s.events_after(mapping["runs"]["child"], 0))[0]
    assert child_event.as_dict() == {"seq": 3, "run_id": mapping["runs"]["child"],
                                     "kind": "run.status", "status": "completed"}
    # Their frames are stored under the new seq and run id, as the daemon's own are.
    conn = sqlite3.connect(s._settings.db_path)
    stored = dict(conn.execute("SELECT seq, frame FROM events WHERE seq IN (2, 3)"))
    conn.close()
    assert stored == {e.seq: build_frame(e.seq, e.run_id, "run.status",
                                         b'{"status":"completed"}') for e in imported}
    # The store's own appends continue after the imported rows, without a collision.
    s.append_event("run_after", "k", {})
    await s.flush()
    assert [e.seq for e in published] == [1, 4] and s.write_failures == 0


@pytest.mark.parametrize(("change", "code"), [
    (lambda b: b["runs"][0].pop("context_id"), "invalid_bundle"),
    (lambda b: b["runs"][0].update(input={"parts": "x"}), "invalid_bundle"),
    (lambda b: b["runs"][0]["input"]["parts"].append({"kind": "image"}), "invalid_bundle"),
    (lambda b: b["runs"][0]["input"]["parts"].append({"kind": "file"}), "invalid_bundle"),
    (lambda b: b["events"][0].update(seq="7"), "invalid_bundle"),
    (lambda b: b["sessions"].append(dict(b["sessions"][0])), "invalid_bundle"),
    (lambda b: b.update(blobs=[]), "invalid_bundle"),
])
def test_validator_refuses_malformed_records(change: Any, code: str) -> None:
    doc = bundle()
    change(doc)
    with pytest.raises(BadRequest) as info:
        validate_bundle(doc)
    assert info.value.code == code and info.value.extra.get("where")


def test_a_run_request_stores_nothing_a_bundle_could_not_carry() -> None:
    """Data parts nested deeper than the bundle limit are refused when the run is created."""
    deep: Any = {}
    for _ in range(MAX_DEPTH):  # {} is one level: this nests MAX_DEPTH + 1 deep
        deep = {"k": deep}
    with pytest.raises(BadRequest) as info:
        parse_run_request({"parts": [{"kind": "data", "data": deep}]})
    assert info.value.code == "nesting_too_deep"
    parse_run_request({"parts": [{"kind": "data", "data": deep["k"]}]})


def base64_of_zeros(size: int) -> str:
    """What base64 makes of `size` zero bytes, without making them (the limit is 160 MiB)."""
    padding = (3 - size % 3) % 3
    return "A" * (4 * -(-size // 3) - padding) + "=" * padding


def test_a_blob_of_exactly_the_limit_passes_and_one_byte_more_does_not() -> None:
    assert base64_of_zeros(1000) == base64.b64encode(bytes(1000)).decode()
    for size in (MAX_BLOB_BYTES, MAX_BLOB_BYTES - 1):  # padded "=" and "=="
        encoded = base64_of_zeros(size)
        assert _blob_sizes({"a" * 64: {"bytes_base64": encoded, "size": size}})
    encoded = base64_of_zeros(MAX_BLOB_BYTES + 1)
    with pytest.raises(PayloadTooLarge):
        _blob_sizes({"a" * 64: {"bytes_base64": encoded, "size": MAX_BLOB_BYTES}})


def test_a_blob_is_checked_a_slice_at_a_time_as_strictly_as_whole(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bundle_validate, "BASE64_CHUNK", 8)
    data = bytes(range(256)) * 3 + b"xy"
    encoded = base64.b64encode(data).decode()
    assert b"".join(decoded_chunks(encoded)) == data
    # "QQ==" then more: whole, this is refused; a slice ending in padding must be too.
    for bad_text in ("QUFBQQ==QUFB", "QUFB*UFB", "QUFBQUF"):
        with pytest.raises((binascii.Error, ValueError)):
            b"".join(decoded_chunks(bad_text))
