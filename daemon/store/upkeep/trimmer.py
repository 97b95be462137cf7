"""Runs the retention policy (`retention.py`): at start, every CHECK_INTERVAL, and when
asked (`history trim`). One session per write transaction with a pause between, so runs and
requests go on; then the freed pages go back to the filesystem, a step per write
(`daemon/store/removal/space.py`)."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from datetime import UTC, datetime
from functools import partial
from typing import Any

from llamon_playground.common.config import Settings
from llamon_playground.daemon.errors import StoreError
from llamon_playground.daemon.store.database import Store
from llamon_playground.daemon.store.history_service import HistoryService
from llamon_playground.daemon.store.removal.space import give_back, incremental
from llamon_playground.daemon.store.upkeep.retention import (
    KEEP_NEWER_THAN,
    Plan,
    Policy,
    database_bytes,
    files_bytes,
    iso,
    plan,
    remove_session,
)

log = logging.getLogger(__name__)

CHECK_INTERVAL = 300.0
PAUSE = 0.005  # between two transactions: other writes get the writer first


class Trimmer:
    """Owns the policy's background task and answers what history holds."""

    def __init__(self, settings: Settings, store: Store, history: HistoryService) -> None:
        self._settings = settings
        self._store = store
        self._history = history  # removes each session under deletion's rules and lock
        self.policy = Policy.of(settings)
        self._lock = asyncio.Lock()  # one trim at a time
        self._task: asyncio.Task[None] | None = None
        self._files_bytes: int | None = None  # scanning files/ is kept off /health's path

    def summary(self) -> dict[str, Any]:
        """For /health: the policy and the size history takes on disk (database and files,
        the files as of the last check)."""
        files = self._files_bytes or 0
        return {**self.policy.as_dict(),
                "bytes": database_bytes(self._settings.db_path) + files}

    def start(self) -> None:
        """Start applying retention in the background."""
        self._task = asyncio.create_task(self._loop(), name="retention")

    async def close(self) -> None:
        """Stop applying retention and wait for the task to end."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    async def _loop(self) -> None:
        while True:
            if self._store.is_open:
                self._files_bytes = await asyncio.to_thread(files_bytes,
                                                            self._settings.files_dir)
                if self.policy.on:
                    try:
                        await self.trim()
                    except StoreError as exc:
                        log.info("retention put off: %s", exc)
            await asyncio.sleep(CHECK_INTERVAL)

    async def _read(self, fn: Any) -> Any:
        """Run fn(conn) on a read-only connection of its own, in one read transaction, in a
        thread (a plan reads every session)."""
        def run() -> Any:
            conn = sqlite3.connect(f"{self._settings.db_path.as_uri()}?mode=ro", uri=True,
                                   isolation_level=None)
            try:
                conn.execute("BEGIN")
                return fn(conn)
            finally:
                conn.close()
        return await asyncio.to_thread(run)

    async def report(self) -> dict[str, Any]:
        """What history holds and what the policy would remove now (`history --dry-run`)."""
        await self._store.open()

        def read(conn: sqlite3.Connection) -> dict[str, Any]:
            counts = {t: int(conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0])
                      for t in ("sessions", "runs")}
            counts["events"] = int(conn.execute("SELECT COUNT(*) FROM events").fetchone()[0]) \
                + int(conn.execute("SELECT COALESCE(sum(events), 0) FROM event_blocks")
                      .fetchone()[0])
            counts["files"] = int(conn.execute(
                "SELECT COUNT(DISTINCT sha256) FROM run_files").fetchone()[0])
            return {"counts": counts, "incremental_vacuum": incremental(conn),
                    "plan": plan(conn, self.policy, self._settings.files_dir).as_dict()}
        doc: dict[str, Any] = await self._read(read)
        files = await asyncio.to_thread(files_bytes, self._settings.files_dir)
        self._files_bytes = files
        return {"policy": self.policy.as_dict(),
                "bytes": {"database": database_bytes(self._settings.db_path), "files": files},
                **doc}

    async def trim(self) -> dict[str, Any]:
        """Apply the policy now: what was removed and the bytes given back."""
        await self._store.open()
        async with self._lock:
            before = database_bytes(self._settings.db_path)
            todo: Plan = await self._read(
                lambda conn: plan(conn, self.policy, self._settings.files_dir))
            removed_sessions = removed_runs = blobs_removed = 0
            for session in todo.sessions:
                recent = iso(datetime.now(UTC) - KEEP_NEWER_THAN)
                removed = await self._history.remove_for_policy(
                    session["id"], partial(self._store.write, partial(
                        remove_session, session_id=session["id"], recent=recent)))
                if removed is not None:  # else kept after all (labelled or used since)
                    removed_sessions += 1
                    removed_runs += int(session["runs"])
                    blobs_removed += removed
                await asyncio.sleep(PAUSE)
            if removed_sessions:
                await self.give_back()
                log.info("retention removed %d session(s), %d run(s)", removed_sessions,
                         removed_runs)
            self._files_bytes = await asyncio.to_thread(files_bytes, self._settings.files_dir)
            return {"removed": {"sessions": removed_sessions, "runs": removed_runs},
                    "blobs_removed": blobs_removed, "bytes_before": before,
                    "bytes_after": database_bytes(self._settings.db_path)}

    async def give_back(self) -> None:
        """Free pages back to the filesystem (`daemon/store/removal/space.py`)."""
        await give_back(self._store, self._settings.state_dir)
