"""Redaction: secrets in user metadata never reach the database or an export,
while the Host still receives the metadata as sent. Checked with canaries: every secret
value (and the `.env` file) contains CANARY, the capture token is read from the Host's
environment, and the raw bytes of the database, its WAL and the export are searched."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import orjson

from llamon_playground.daemon.store.frames import inflate
from tests.e2e.data_support import finished_run, make_spy_project, serving, spy_records, text
from tests.support.procs import Stack, copy_example

SESSION_METADATA = {"owner": "me", "credentials": {"user": "u", "pw": "CANARY-S1"},
                    "Session-Cookie": "CANARY-S2"}
RUN_METADATA = {
    "userId": "user-1",
    "auth": {"nested": {"password": "CANARY-R1"}},
    "headers": {"X-Api-Key": "CANARY-R2", "Accept": "text/plain"},
    "notes": [{"text": "use sk-CANARYR3abcdefghijklmnop please"}],
    "callback": "https://hooks.example/cb?page=2&token=CANARY-R4",
    "id_hint": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJDQU5BUlkifQ.CANARY-R5-signature",
    "header_line": "Bearer CANARYR6abcdefghij",
    "levels": {"a": {"b": {"c": {"PrivateKey": ["CANARY-R7"]}}}},
}


def raw_history(stack: Stack) -> bytes:
    """The database's bytes, with a finished run's compressed event blocks inflated (a
    secret in them would not show in the file's bytes)."""
    db = stack.settings.db_path
    wal = db.with_name(db.name + "-wal")
    conn = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True)
    try:
        blocks = b"".join(inflate(bytes(f), c) + inflate(bytes(t), c) for f, t, c in
                          conn.execute("SELECT frames, stamps, codec FROM event_blocks"))
    finally:
        conn.close()
    return db.read_bytes() + (wal.read_bytes() if wal.exists() else b"") + blocks


async def test_metadata_secrets_are_redacted_in_storage_and_exports(tmp_path: Path) -> None:
    project = make_spy_project(copy_example(tmp_path))
    (project / ".env").write_text("LLAMON_TEST_SECRET=CANARY-ENV\n")
    async with serving(project) as (stack, api):
        session = (await api.ok("POST", "sessions", {"title": "t",
                                                     "metadata": SESSION_METADATA}, 201))
        run = await finished_run(api, session["id"], [text("stream hello")],
                                 metadata=RUN_METADATA)
        assert run["status"] == "completed"
        stored = run["input"]["metadata"]
        assert stored["userId"] == "user-1" and stored["auth"] == "[REDACTED]"
        assert stored["headers"] == {"X-Api-Key": "[REDACTED]", "Accept": "text/plain"}
        assert stored["callback"] == "https://hooks.example/cb?page=2&token=[REDACTED]"
        assert stored["notes"] == [{"text": "use [REDACTED] please"}]
        assert stored["levels"] == {"a": {"b": {"c": {"PrivateKey": "[REDACTED]"}}}}
        assert session["metadata"] == {"owner": "me", "credentials": "[REDACTED]",
                                       "Session-Cookie": "[REDACTED]"}
        bundle = await api.ok("POST", "bundles/export", {})
        history = raw_history(stack)
    # The Host got the metadata exactly as sent.
    record = spy_records(project)[-1]
    received = record["metadata"]
    assert {k: v for k, v in received.items() if k != "llamon.playground"} == RUN_METADATA
    token = record["capture_token"].encode()
    assert len(token) >= 32
    exported = orjson.dumps(bundle)
    for canary in (b"CANARY", token):
        assert canary not in history and canary not in exported
    assert b'"llamon.playground"' not in exported
    assert "user content" in bundle["privacy_warning"]
