"""The store's read side: one aiosqlite connection of its own, which WAL never blocks and
which never waits for the writer (daemon/store/database.py holds the write side)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import Any

import aiosqlite

from llamon_playground.daemon.errors import StoreError
from llamon_playground.daemon.store.frames import BLOCK_AFTER_SQL, FRAMES_SQL, block_page
from llamon_playground.daemon.store.records import EventRecord


class StoreReads:
    """Reads on the reader connection, which the store opens and closes (`_reader`)."""

    _reader: aiosqlite.Connection | None = None

    @property
    def reader(self) -> aiosqlite.Connection:
        """The read connection; StoreError before `open`."""
        if self._reader is None:
            raise StoreError("store is not open")
        return self._reader

    async def fetch_all(self, sql: str, params: Iterable[Any] = ()) -> list[sqlite3.Row]:
        """Every row of a read query, on the reader connection (never waits for the writer)."""
        rows = await self.reader.execute_fetchall(sql, tuple(params))
        return list(rows)

    async def fetch_one(self, sql: str, params: Iterable[Any] = ()) -> sqlite3.Row | None:
        """The first row of a read query, or None."""
        rows = await self.fetch_all(sql, params)
        return rows[0] if rows else None

    async def frames_after(self, run_id: str, after: int, limit: int = 2000
                           ) -> tuple[bytes, int, bool]:
        """The stored SSE frames of the next `limit` events after `after` (of a finished
        run's blocks: the rest of one block), joined: (bytes, last seq, whether the page
        holds the terminal run.status)."""
        rows = list(await self.reader.execute_fetchall(FRAMES_SQL, (run_id, after, limit)))
        # Then the blocks: a finished run's earlier events (daemon/store/frames.py). Read
        # second, so events that moved there since the first read are found there.
        block = list(await self.reader.execute_fetchall(BLOCK_AFTER_SQL, (run_id, after)))
        if block:
            page = block_page(block[0], after)
            if page is not None:
                return page
        data, last, terminal = rows[0] if rows else (None, 0, 0)
        if not data:
            return b"", after, False
        return bytes(data), int(last), bool(terminal)

    async def events_after(self, run_id: str, after: int, limit: int = 2000) -> list[EventRecord]:
        """The next `limit` committed events of a run after seq `after`, in seq order."""
        rows = await self.reader.execute_fetchall(
            "SELECT seq, kind, frame FROM events WHERE run_id = ? AND seq > ? "
            "ORDER BY seq LIMIT ?", (run_id, after, limit))
        return [EventRecord(r[0], run_id, r[1], bytes(r[2])) for r in rows]
