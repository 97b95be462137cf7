"""The floor of a run's creation: the daemon's own create transaction, run in this process.

The same connection setup as the daemon's writer (daemon/store/wal.py: WAL,
synchronous=FULL), the same write op (the run row, its session looked up inside) with the
same first event, committed by the same batch code, on a database of its own in the same
file system. What `run_create_202` measures on top of this is the daemon's: HTTP, the
hand-off to its writer thread and back, and the front.
"""

from __future__ import annotations

import time
from pathlib import Path

from llamon_playground.common.ids import new_context_id, new_run_id
from llamon_playground.daemon.data.parts import parse_run_request
from llamon_playground.daemon.data.redact import redact_metadata
from llamon_playground.daemon.store.batch import Batches, PendingOp
from llamon_playground.daemon.store.history import run_insert_op
from llamon_playground.daemon.store.records import compact_json, utcnow
from llamon_playground.daemon.store.wal import open_writer


class CreateFloor:
    """A database with one session; `one()` times one create transaction (then ends the
    run, untimed, as the daemon does before the next create can start)."""

    def __init__(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self._conn, seq = open_writer(str(folder / "floor.sqlite3"), 5000)
        self._batches = Batches()
        self._batches.next_seq = seq
        self._session = "ses_floor"
        self._conn.execute("INSERT INTO sessions (id, title, context_id, created_at, metadata) "
                           "VALUES (?, 'floor', ?, ?, '{}')",
                           (self._session, new_context_id(), utcnow()))

    def one(self, body: object) -> float:
        """Milliseconds of one create's transaction: BEGIN to a durable COMMIT."""
        request = parse_run_request(body)
        run_id = new_run_id()
        row = {"id": run_id, "session_id": self._session, "status": "queued",
               "created_at": utcnow(), "context_id": None, "task_id": None,
               "parent_run_id": None, "rerun_of": None,
               "input": {**request.stored_input(), "metadata": redact_metadata(request.metadata)},
               "label": None, "edited_fields": None, "suite_run_id": None, "case_id": None}
        item = PendingOp(run_insert_op(row, []), None,
                         [(run_id, "run.status", compact_json({"status": "queued"}))])
        t0 = time.perf_counter()
        _, results = self._batches.commit(self._conn, [item], utcnow())
        elapsed = (time.perf_counter() - t0) * 1000
        if results[0][2] is not None:
            raise RuntimeError(f"the floor's create failed: {results[0][2]}")
        self._conn.execute("UPDATE runs SET status = 'completed' WHERE id = ?", (run_id,))
        return elapsed

    def close(self) -> None:
        self._conn.close()
