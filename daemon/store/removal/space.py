"""Free pages back to the filesystem after a deletion (delete all, the retention policy).

A deleted row's pages stay in the file as free pages until something gives them back. A
database created by this version is `auto_vacuum=INCREMENTAL` from its first page, so
`PRAGMA incremental_vacuum` can cut free pages off the end of the file a few at a time,
each step a short write transaction queued behind the others (docs/storage.md,
"Retention"). An older file needs one `VACUUM` to switch, done only when it is cheap.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import sqlite3
import time
from pathlib import Path

from llamon_playground.daemon.store.database import Store

log = logging.getLogger(__name__)

VACUUM_PAGES = 4096  # at most this many pages per write (16 MiB of 4 KiB pages) ...
VACUUM_SECONDS = 0.02  # ... and for at most about this long, so other writes wait little
PAUSE = 0.005  # between two steps: other writes get the writer first


def incremental(conn: sqlite3.Connection) -> bool:
    """Whether the file gives free pages back by incremental vacuum."""
    return int(conn.execute("PRAGMA auto_vacuum").fetchone()[0]) == 2


def used_bytes(conn: sqlite3.Connection) -> int:
    """The database's pages in use (free pages do not count: they are given back)."""
    pages = int(conn.execute("PRAGMA page_count").fetchone()[0])
    free = int(conn.execute("PRAGMA freelist_count").fetchone()[0])
    return (pages - free) * int(conn.execute("PRAGMA page_size").fetchone()[0])


def vacuum_step(conn: sqlite3.Connection) -> bool:
    """Give back up to VACUUM_PAGES free pages, for about VACUUM_SECONDS; whether any are
    left. Python's sqlite3 steps a statement that returns no rows once, and one step of
    `PRAGMA incremental_vacuum(N)` frees one page whatever N is: so one page a statement
    (measured: 256 pages a write asked, one given)."""
    deadline = time.monotonic() + VACUUM_SECONDS
    for n in range(VACUUM_PAGES):
        conn.execute("PRAGMA incremental_vacuum(1)")
        if n % 64 == 63 and (time.monotonic() > deadline or not _free_pages(conn)):
            break
    return _free_pages(conn) > 0


def _free_pages(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA freelist_count").fetchone()[0])


async def give_back(store: Store, state_dir: Path) -> None:
    """Every free page back to the filesystem, a step per write, then a checkpoint that
    truncates the WAL. A file from before incremental vacuum is switched first, once, when
    that is cheap (`switch_to_incremental`); else its free pages stay for the next writes."""
    def switch(conn: sqlite3.Connection) -> bool:
        return switch_to_incremental(conn, state_dir)
    if not await store.outside_transaction(switch):
        return
    while await store.write(vacuum_step):
        await asyncio.sleep(PAUSE)
    store.checkpoint_soon()


def switch_to_incremental(conn: sqlite3.Connection, state_dir: Path) -> bool:
    """On the writer thread, between transactions. Switching an existing file needs one
    VACUUM, which writes a copy of the pages in use (to a temp file, then through the WAL):
    up to twice the live data on top of the file. So only when the live data is at most
    half the file (a deletion just freed at least as much as the copy needs) and the disk
    has room for twice the live data; otherwise the pages stay free inside the file, reused
    by the next writes, and the switch waits for a later deletion."""
    if incremental(conn):
        return True
    pages = int(conn.execute("PRAGMA page_count").fetchone()[0])
    live = used_bytes(conn)
    total = pages * int(conn.execute("PRAGMA page_size").fetchone()[0])
    room = shutil.disk_usage(state_dir).free
    if live * 2 > total or room < live * 2:
        log.info("incremental vacuum not switched on yet: %d live of %d bytes, %d free",
                 live, total, room)
        return False
    conn.execute("PRAGMA auto_vacuum=INCREMENTAL")
    conn.execute("VACUUM")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return True
