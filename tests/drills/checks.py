"""Invariants every drill checks after a fault."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from llamon_playground.daemon.store.frames import frame_payload

ACTIVE = ("queued", "preparing", "running")


def check_database(db: Path, received: dict[str, list[int]],
                   allowed_active: set[str] | None = None) -> dict[str, int]:
    """integrity_check ok; every event a client received is stored under its run; per-run
    seqs strictly increase with no duplicate; every run terminal (or the allowed active)."""
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        stored: dict[str, list[int]] = {}
        for run_id, seq in conn.execute("SELECT run_id, seq FROM events ORDER BY seq"):
            stored.setdefault(run_id, []).append(seq)
        for run_id, seqs in received.items():
            missing = set(seqs) - set(stored.get(run_id, []))
            assert not missing, f"run {run_id}: received events {sorted(missing)[:5]} are gone"
            assert seqs == sorted(set(seqs)), f"run {run_id}: a client got a duplicate or gap"
        for run_id, seqs in stored.items():
            assert seqs == sorted(set(seqs))
        active = {r for (r,) in conn.execute(
            f"SELECT id FROM runs WHERE status IN {ACTIVE}")}
        assert active <= (allowed_active or set()), f"runs left active: {active}"
        check_rows_match_events(conn)
        runs = conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
        events = conn.execute("SELECT COUNT(*) FROM events").fetchone()[0]
        return {"runs": runs, "events": events}
    finally:
        conn.close()


def check_rows_match_events(conn: sqlite3.Connection) -> None:
    """Each ended run's row says what its events say: the same final status and reason,
    and the output its run.output event carried."""
    for run_id, status, reason, output in conn.execute(
            f"SELECT id, status, reason, output FROM runs WHERE status NOT IN {ACTIVE}"):
        ending = conn.execute(
            "SELECT frame FROM events WHERE run_id = ? AND kind = 'run.status' "
            "ORDER BY seq DESC LIMIT 1", (run_id,)).fetchone()
        if ending is None:
            continue  # an imported run may carry no events at all
        last = frame_payload(ending[0])
        assert (last["status"], last.get("reason")) == (status, reason), (run_id, last, status)
        parts = conn.execute(
            "SELECT frame FROM events WHERE run_id = ? AND kind = 'run.output' "
            "ORDER BY seq DESC LIMIT 1", (run_id,)).fetchone()
        streamed = frame_payload(parts[0])["parts"] if parts else []
        assert streamed == json.loads(output), (run_id, streamed, output)


def check_no_temp_blobs(files_dir: Path) -> None:
    if files_dir.is_dir():
        leftovers = [p.name for p in files_dir.iterdir() if p.name.startswith(".tmp-")]
        assert not leftovers, f"temp blob files left behind: {leftovers}"
