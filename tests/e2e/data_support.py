"""Helpers shared by the tests/e2e/test_data_*.py tests."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import shutil
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import orjson

from llamon_playground.daemon.store.frames import stored_events
from tests.support.api import Api
from tests.support.procs import Stack, short_tmpdir, stack_for
from tests.support.waiting import eventually


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def inline_file(data: bytes, name: str = "in.bin", mime: str = "application/octet-stream"
                ) -> dict[str, Any]:
    return {"kind": "file", "name": name, "mime": mime, "bytes_base64": b64(data)}


async def finished_run(api: Api, session: str, parts: list[dict[str, Any]],
                       **extra: Any) -> dict[str, Any]:
    """Start a run with these input parts and wait until it ends."""
    run_id = (await api.ok("POST", f"sessions/{session}/runs", {"parts": parts, **extra},
                           202))["run_id"]
    return await api.wait_status(run_id)


def text(value: str) -> dict[str, Any]:
    return {"kind": "text", "text": value}


def db_rows(stack: Stack) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every history table (read-only connection: changes nothing), events
    wherever they are kept: the compactor moves a finished run's rows into blocks in the
    background, which changes no event."""
    conn = sqlite3.connect(f"{stack.settings.db_path.as_uri()}?mode=ro", uri=True)
    try:
        conn.execute("BEGIN")  # one snapshot of rows and blocks
        rows = {table: sorted(conn.execute(f"SELECT * FROM {table}").fetchall(), key=repr)
                for table in ("sessions", "runs", "run_files")}
        run_ids = [r[0] for r in conn.execute("SELECT id FROM runs")]
        rows["events"] = [tuple(e) for e in stored_events(conn, run_ids)]
        return rows
    finally:
        conn.close()


def snapshot(stack: Stack) -> dict[str, Any]:
    """What "byte-identical" means in these tests.

    The bytes of the SQLite database file and of its WAL (the -shm index is excluded: every
    reader, this one included, writes read marks there), the logical content of every
    table, and the name and bytes of every entry in the file store (temp files included).
    """
    db = stack.settings.db_path
    wal = db.with_name(db.name + "-wal")
    files = stack.settings.files_dir
    return {"db": db.read_bytes(), "wal": wal.read_bytes() if wal.exists() else None,
            "rows": db_rows(stack),
            "files": {p.name: sha(p.read_bytes()) for p in sorted(files.iterdir())}}


def _settled(stack: Stack) -> bool:
    db = stack.settings.db_path
    wal = db.with_name(db.name + "-wal")
    conn = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True)
    try:
        rows, runs = conn.execute("SELECT COUNT(*), COUNT(DISTINCT run_id) FROM events"
                                  ).fetchone()
    finally:
        conn.close()
    return rows == runs and (not wal.exists() or wal.stat().st_size == 0)


async def settled_snapshot(stack: Stack) -> dict[str, Any]:
    """A snapshot once the daemon's own housekeeping after the last run is done: finished
    runs compacted (docs/storage.md, "On disk") and the WAL checkpointed once idle. Only
    with every run finished."""
    await eventually(lambda: _settled(stack), what="the daemon's housekeeping done")
    return snapshot(stack)


def blob_names(files_dir: Path) -> set[str]:
    return {p.name for p in files_dir.iterdir()}


SPY_HOST = '''"""Test-only Host: the echo agent, recording what each A2A request carried
(and the capture token its environment holds, for canary searches)."""
import json
import os
from pathlib import Path

from google.protobuf.json_format import MessageToDict

from app import host
from app.agent import EchoAgentExecutor


class SpyExecutor(EchoAgentExecutor):
    async def execute(self, context, event_queue):
        message = MessageToDict(context.message) if context.message else {}
        record = {"metadata": context.metadata, "parts": message.get("parts", []),
                  "capture_token": os.environ.get("LLAMON_CAPTURE_TOKEN")}
        with Path("spy.jsonl").open("a") as fh:
            fh.write(json.dumps(record) + "\\n")
        await super().execute(context, event_queue)


host.EchoAgentExecutor = SpyExecutor
host.main()
'''


def make_spy_project(project: Path) -> Path:
    """Turn a copy of the example into a project whose Host records every request it gets
    (in `spy.jsonl`); the example itself is left as it is."""
    (project / "app" / "spy_host.py").write_text(SPY_HOST)
    pyproject = project / "pyproject.toml"
    text = pyproject.read_text()
    assert '"app.host"' in text
    pyproject.write_text(text.replace('"app.host"', '"app.spy_host"'))
    return project


def spy_records(project: Path) -> list[dict[str, Any]]:
    path = project / "spy.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line]


async def post_big(api: Api, path: str, body: Any) -> tuple[int, Any]:
    """POST a large JSON body (as a stream: aiohttp warns about big raw bytes bodies)."""
    raw = body if isinstance(body, bytes) else orjson.dumps(body)
    async with api.http.post(f"/api/playground/v1/{path}", data=io.BytesIO(raw),
                             headers={"Content-Type": "application/json"}) as resp:
        return resp.status, orjson.loads(await resp.read())


@asynccontextmanager
async def serving(project: Path) -> AsyncIterator[tuple[Stack, Api]]:
    """A daemon of our own for `project` (a second project folder, or a customised copy),
    with a client on its socket; torn down like the fixtures' stacks."""
    runtime = short_tmpdir("lp")
    try:
        with stack_for(project, runtime) as stack:
            stack.start_daemon()
            api = Api.for_socket(str(stack.settings.socket_path))
            try:
                yield stack, api
            finally:
                await api.close()
    finally:
        shutil.rmtree(runtime, ignore_errors=True)
