"""What the benchmark writes or sends: SQLite fixtures (written while no daemon runs on the file),
a project with many files, the echo agent's prompts."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import orjson

from llamon_playground.common.ids import new_run_id
from llamon_playground.daemon.store.database import utcnow
from llamon_playground.daemon.store.frames import INSERT_EVENTS, build_frame
from llamon_playground.daemon.store.migrations import MIGRATIONS, split_sql
from scripts.benchmarks.stack import copy_example

# The daemon's first events table and index (one JSON payload per row, no frame), taken from
# its first migration: the raw sqlite3 baseline that appends are measured against.
EVENTS_DDL = "\n".join(stmt for stmt in split_sql(MIGRATIONS[0])
                       if stmt.startswith(("CREATE TABLE events", "CREATE INDEX events_")))
INSERT_EVENT = "INSERT INTO events (seq, run_id, kind, payload, ts) VALUES (?, ?, ?, ?, ?)"
NO_WATCH = {"LLAMON_PLAYGROUND_WATCH": "0"}  # fixtures are written while no daemon runs


def stream_text(words: int) -> str:
    """A prompt the echo agent streams back word by word (one output.delta each)."""
    return "stream " + " ".join(f"w{i:05d}" for i in range(words))


def insert_finished_run(db_path: Path, session_id: str, context_id: str, n: int) -> str:
    """A completed run with n events (n-1 output.delta, then run.status completed)."""
    run_id = new_run_id()
    now = utcnow()
    conn = sqlite3.connect(db_path, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute("PRAGMA foreign_keys=ON")
        first = int(conn.execute("SELECT COALESCE(MAX(seq), 0) FROM events").fetchone()[0]) + 1
        delta = orjson.dumps({"text": "tok ", "artifact_id": "bench-echo"})
        events = [("output.delta", delta)] * (n - 1) + [
            ("run.status", orjson.dumps({"status": "completed"}))]
        # A run's rows as the daemon stores them: each event once, as its SSE frame.
        rows = [(first + i, run_id, kind, now, build_frame(first + i, run_id, kind, payload))
                for i, (kind, payload) in enumerate(events)]
        stored_input = orjson.dumps({"parts": [{"kind": "text", "text": "bench"}],
                                     "metadata": {}, "changed_files": [],
                                     "revision": None}).decode()
        conn.execute("BEGIN IMMEDIATE")
        conn.execute(
            "INSERT INTO runs (id, session_id, status, created_at, started_at, ended_at, "
            "duration_ms, context_id, input, output) VALUES (?, ?, 'completed', ?, ?, ?, ?, ?, "
            "?, ?)", (run_id, session_id, now, now, now, 1.0, context_id, stored_input,
                      orjson.dumps([{"kind": "text", "text": "tok " * 10}]).decode()))
        conn.executemany(INSERT_EVENTS, rows)
        conn.execute("COMMIT")
    finally:
        conn.close()
    return run_id


def run_events(task_id: str, deltas: int, text_total: str) -> list[tuple[str, bytes]]:
    """(kind, payload) of a completed `stream` run, in the shape the daemon writes them."""
    d = orjson.dumps
    head = [("run.status", {"status": "queued"}),
            ("run.status", {"status": "preparing", "previous": "queued"}),
            ("run.phase", {"phase": "validate", "state": "started"}),
            ("run.phase", {"phase": "validate", "state": "completed", "warnings": []}),
            ("run.phase", {"phase": "save", "state": "skipped"}),
            ("run.phase", {"phase": "restart", "state": "skipped"}),
            ("run.phase", {"phase": "ready", "state": "started"}),
            ("run.phase", {"phase": "ready", "state": "completed", "generation": 1}),
            ("run.status", {"status": "running", "previous": "preparing"}),
            ("run.phase", {"phase": "send", "state": "started"}),
            ("trace", {"type": "node.start", "node": "echo"})]
    tail = [("trace", {"type": "node.end", "node": "echo"}),
            ("trace", {"type": "evaluation.result", "evaluator": "word_count", "score": deltas,
                       "passStatus": "fail", "node": "echo", "scope": "node"}),
            ("trace", {"type": "evaluation.result", "evaluator": "mentions_hello",
                       "score": 0.0, "passStatus": "fail", "reason": "no hello in the answer"}),
            ("run.phase", {"phase": "send", "state": "completed", "task_state": "completed"}),
            ("run.output", {"parts": [{"kind": "text", "text": text_total}]}),
            ("run.phase", {"phase": "complete", "state": "completed", "status": "completed"}),
            ("run.status", {"status": "completed", "previous": "running"})]
    delta = d({"text": "tok ", "artifact_id": f"{task_id}-echo"})
    return ([(k, d(p)) for k, p in head] + [("output.delta", delta)] * deltas
            + [(k, d(p)) for k, p in tail])


HEAD_TAIL_EVENTS = 18  # run_events' framing around the deltas


def build_history(db_path: Path, session_id: str, context_id: str, runs: int,
                  events_per_run: int) -> list[str]:
    """`runs` completed runs of `events_per_run` events each, straight into the database
    (the daemon's schema; the daemon is stopped meanwhile)."""
    deltas = events_per_run - HEAD_TAIL_EVENTS
    text_total = "tok " * deltas
    output = orjson.dumps([{"kind": "text", "text": text_total}]).decode()
    scores = orjson.dumps([
        {"evaluator": "word_count", "score": deltas, "passStatus": "fail", "scope": "node",
         "node": "echo"},
        {"evaluator": "mentions_hello", "score": 0.0, "reason": "no hello in the answer",
         "passStatus": "fail"}]).decode()
    base = time.time() - runs * 60
    conn = sqlite3.connect(db_path, isolation_level=None)
    run_ids = []
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=OFF")  # a fixture; the daemon writes with FULL
        conn.execute("PRAGMA cache_size=-200000")
        seq = int(conn.execute("SELECT COALESCE(MAX(seq), 0) FROM events").fetchone()[0])
        conn.execute("BEGIN IMMEDIATE")
        for i in range(runs):
            run_id = new_run_id()
            run_ids.append(run_id)
            task_id = f"task-{i:05d}"
            t = base + i * 60
            created = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + ".000Z"
            ended = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t + 2)) + ".000Z"
            stored_input = orjson.dumps({"parts": [{"kind": "text",
                                                    "text": f"bench question {i}"}],
                                         "metadata": {}, "changed_files": [],
                                         "revision": None}).decode()
            conn.execute(
                "INSERT INTO runs (id, session_id, status, created_at, started_at, ended_at, "
                "duration_ms, context_id, task_id, input, output, scores, generation) "
                "VALUES (?, ?, 'completed', ?, ?, ?, ?, ?, ?, ?, ?, ?, 1)",
                (run_id, session_id, created, created, ended, 2000.0, context_id, task_id,
                 stored_input, output, scores))
            events = run_events(task_id, deltas, text_total)
            rows = [(seq + 1 + j, run_id, kind, created,
                     build_frame(seq + 1 + j, run_id, kind, payload))
                    for j, (kind, payload) in enumerate(events)]
            seq += len(rows)
            conn.executemany(INSERT_EVENTS, rows)
        conn.execute("COMMIT")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    return run_ids


def make_big_project(tmp: Path, files: int) -> Path:
    """The example plus `files` small .py files in nested folders (10 x 10 x files/100)."""
    project = copy_example(tmp, "big_project")
    root = project / "gen"
    for i in range(files):
        d = root / f"p{i // 1000:02d}" / f"q{(i // 100) % 10}"
        if i % 100 == 0:
            d.mkdir(parents=True, exist_ok=True)
            (d / "__init__.py").write_text("")
        (d / f"m{i:05d}.py").write_text(f"VALUE_{i} = {i}\n\n\ndef f_{i}() -> int:\n"
                                        f"    return VALUE_{i} * 2\n")
    return project

