"""Invariants every drill checks after a fault."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from llamon_playground.daemon.store.frames import frame_payload, stored_events
from llamon_playground.daemon.store.records import EventRow

ACTIVE = ("queued", "preparing", "running")


def check_database(db: Path, received: dict[str, list[int]],
                   allowed_active: set[str] | None = None) -> dict[str, int]:
    """integrity_check ok; every event a client received is stored under its run; per-run
    seqs strictly increase with no duplicate; every run terminal (or the allowed active)."""
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        stored: dict[str, list[int]] = {}
        for seq, run_id, *_ in all_events(conn):
            stored.setdefault(run_id, []).append(seq)
        for run_id, seqs in received.items():
            missing = set(seqs) - set(stored.get(run_id, []))
            assert not missing, f"run {run_id}: received events {sorted(missing)[:5]} are gone"
            assert seqs == sorted(set(seqs)), f"run {run_id}: a client got a duplicate or gap"
        for seqs in stored.values():
            assert seqs == sorted(set(seqs))
        active = {r for (r,) in conn.execute(
            f"SELECT id FROM runs WHERE status IN {ACTIVE}")}
        assert active <= (allowed_active or set()), f"runs left active: {active}"
        check_rows_match_events(conn)
        runs = conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
        return {"runs": runs, "events": len(all_events(conn))}
    finally:
        conn.close()


def all_events(conn: sqlite3.Connection) -> list[EventRow]:
    """Every stored event, a live run's rows and a finished run's blocks alike, by seq."""
    run_ids = sorted({r[0] for r in conn.execute(
        "SELECT run_id FROM events UNION SELECT run_id FROM event_blocks")})
    return stored_events(conn, run_ids)


def check_rows_match_events(conn: sqlite3.Connection) -> None:
    """Each ended run's row says what its events say: the same final status and reason,
    and the output its run.output event carried."""
    by_run: dict[str, list[EventRow]] = {}
    for event in all_events(conn):
        by_run.setdefault(event[1], []).append(event)
    for run_id, status, reason, output in conn.execute(
            f"SELECT id, status, reason, output FROM runs WHERE status NOT IN {ACTIVE}"):
        events = by_run.get(run_id, [])
        endings = [e[4] for e in events if e[2] == "run.status"]
        if not endings:
            continue  # an imported run may carry no events at all
        last = frame_payload(endings[-1])
        assert (last["status"], last.get("reason")) == (status, reason), (run_id, last, status)
        parts = [e[4] for e in events if e[2] == "run.output"]
        streamed = frame_payload(parts[-1])["parts"] if parts else []
        assert streamed == json.loads(output), (run_id, streamed, output)


def check_no_temp_blobs(files_dir: Path) -> None:
    if files_dir.is_dir():
        leftovers = [p.name for p in files_dir.iterdir() if p.name.startswith(".tmp-")]
        assert not leftovers, f"temp blob files left behind: {leftovers}"
