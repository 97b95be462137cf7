"""Delete all history in small write transactions (docs/storage.md, "Deletion").

A year of history is a hundred thousand runs; deleting them in one transaction held the
writer for as long as that took (every other write, a run's creation among them, waited)
and wrote a WAL as large as the data. So deletion goes a step at a time, each step one
short write transaction queued behind whatever waits for the writer:

- `begin` notes what "all" is: the sessions and runs there are now, in two temporary
  tables of the writer's connection (its own, gone with it). Whatever is
  created afterwards (a run started meanwhile, an import) is not in them and stays; row
  ids cannot say that, SQLite hands a deleted row's id out again. It deletes the suites
  (their cases, runs, reports and progress events) at once: they are few.
- Each `step` deletes whole sessions, oldest first, for about STEP_SECONDS (longer while
  no other write waits for the writer). A session of more than CHUNK_RUNS runs goes that
  many runs at a time, newest first (so what is left of it is that session as it was
  earlier), and its row with its last run. A run always goes whole: its row, its events
  and blocks, its file references, its search entry, in one transaction.

A kill between two steps leaves some sessions whole and the rest gone: nothing half
deleted, nothing left that refers to what went (a run resumed from a deleted one loses the
link, as when its session is deleted). Asking again deletes the rest.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from llamon_playground.daemon.store.history import runs_deleted

# A step's time on the writer thread, about (one chunk at least): the shorter while other
# writes wait for the writer, the longer while none does (measured on a year's history:
# 9,100 runs a second in 250 ms steps, 6,000 in 25 ms ones; a commit costs the same).
STEP_SECONDS = 0.025
STEP_SECONDS_ALONE = 0.25
CHUNK_RUNS = 16  # runs deleted at once (a session of up to this many goes whole)
REBUILD_RUNS = 1000  # the search index is rebuilt at the end when at most this many are left
LEFT_SQL = f"SELECT COUNT(*) FROM (SELECT 1 FROM runs LIMIT {REBUILD_RUNS + 1})"
PAUSE = 0.002  # between two steps

CREATE_TEMP = (
    "CREATE TEMP TABLE IF NOT EXISTS doomed_sessions (pos INTEGER PRIMARY KEY, id TEXT)",
    "CREATE TEMP TABLE IF NOT EXISTS doomed_runs (id TEXT PRIMARY KEY) WITHOUT ROWID",
)
SUITE_TABLES = ("suite_results", "suite_runs", "suite_files", "suite_cases", "suites")


@dataclass
class Tally:
    """What a deletion removed so far (the answer's `deleted`) and the blobs the removed
    rows referenced (unlinked after each commit, when nothing references them any more)."""

    sessions: int = 0
    runs: int = 0
    events: int = 0
    suites: int = 0
    shas: set[str] = field(default_factory=set)
    more: bool = True  # whether another step has something to delete

    def add(self, other: Tally) -> None:
        self.sessions += other.sessions
        self.runs += other.runs
        self.events += other.events
        self.suites += other.suites

    def counts(self) -> dict[str, int]:
        return {"sessions": self.sessions, "runs": self.runs, "events": self.events,
                "suites": self.suites}


def begin(conn: sqlite3.Connection) -> Tally:
    """Note every session and run there is now; delete every suite (inside the writer's
    transaction, queued right after the check that no run is active)."""
    for statement in CREATE_TEMP:
        conn.execute(statement)
    conn.execute("DELETE FROM temp.doomed_sessions")
    conn.execute("DELETE FROM temp.doomed_runs")
    conn.execute("INSERT INTO temp.doomed_sessions (id) SELECT id FROM sessions ORDER BY rowid")
    conn.execute("INSERT INTO temp.doomed_runs (id) SELECT id FROM runs")
    tally = Tally(suites=int(conn.execute("SELECT COUNT(*) FROM suites").fetchone()[0]))
    tally.shas.update(r[0] for r in conn.execute("SELECT DISTINCT sha256 FROM suite_files"))
    # A suite run's progress is events under its own id (no run row): they go with it.
    tally.events = conn.execute(
        "DELETE FROM events WHERE run_id IN (SELECT id FROM suite_runs)").rowcount
    for table in SUITE_TABLES:
        conn.execute(f"DELETE FROM {table}")
    return tally


def step(conn: sqlite3.Connection, others_waiting: Callable[[], bool] = lambda: False
         ) -> Tally:
    """Delete the next few sessions (or runs of a large one), for about STEP_SECONDS, or
    STEP_SECONDS_ALONE while `others_waiting()` says no other write waits for the writer;
    `more` says whether anything noted by `begin` is left. The last step drops the notes."""
    tally = Tally()
    start = time.monotonic()
    while True:
        row = conn.execute(
            "SELECT pos, id FROM temp.doomed_sessions ORDER BY pos LIMIT 1").fetchone()
        if row is None:
            # The search index keeps a deleted run's words as tombstones until its segments
            # merge (measured: 45 MB of them after a year). Rebuilt from what is left (the
            # runs made meanwhile, if any) it is small again, and so is what the VACUUM that
            # gives the space back must copy (`daemon/store/removal/space.py`).
            if conn.execute(LEFT_SQL).fetchone()[0] <= REBUILD_RUNS:
                conn.execute("INSERT INTO run_search (run_search) VALUES ('rebuild')")
            conn.execute("DROP TABLE IF EXISTS temp.doomed_sessions")
            conn.execute("DROP TABLE IF EXISTS temp.doomed_runs")
            tally.more = False
            return tally
        pos, session_id = row
        runs = [r[0] for r in conn.execute(
            "SELECT id FROM runs WHERE session_id = ? AND id IN temp.doomed_runs "
            "ORDER BY rowid DESC LIMIT ?", (session_id, CHUNK_RUNS + 1))]
        if runs:
            delete_runs(conn, runs[:CHUNK_RUNS], tally)
        if len(runs) <= CHUNK_RUNS:  # none of its noted runs left: the session goes too
            # ... unless a run was started in it meanwhile: then it stays, with that run.
            tally.sessions += conn.execute(
                "DELETE FROM sessions WHERE id = ? AND NOT EXISTS "
                "(SELECT 1 FROM runs WHERE session_id = ?)", (session_id, session_id)).rowcount
            conn.execute("DELETE FROM temp.doomed_sessions WHERE pos = ?", (pos,))
        spent = time.monotonic() - start
        if spent >= STEP_SECONDS_ALONE or (spent >= STEP_SECONDS and others_waiting()):
            return tally


def delete_runs(conn: sqlite3.Connection, run_ids: list[str], tally: Tally) -> None:
    """These runs whole: events, blocks (the trigger), file references, search entries
    (the trigger), the row; a run resumed from one of them keeps its row, not the link."""
    marks = ", ".join("?" * len(run_ids))
    tally.shas.update(r[0] for r in conn.execute(
        f"SELECT sha256 FROM run_files WHERE run_id IN ({marks})", run_ids))
    tally.events += int(conn.execute(
        f"SELECT COALESCE(sum(events), 0) FROM event_blocks WHERE run_id IN ({marks})",
        run_ids).fetchone()[0])
    tally.events += conn.execute(f"DELETE FROM events WHERE run_id IN ({marks})",
                                 run_ids).rowcount
    conn.execute(f"DELETE FROM run_files WHERE run_id IN ({marks})", run_ids)
    conn.execute(f"UPDATE runs SET parent_run_id = NULL WHERE parent_run_id IN ({marks})",
                 run_ids)
    tally.runs += conn.execute(f"DELETE FROM runs WHERE id IN ({marks})", run_ids).rowcount
    runs_deleted(conn)
