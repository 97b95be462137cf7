"""Free pages back to the filesystem after a deletion (delete all, the retention policy).

A deleted row's pages stay in the file as free pages until something gives them back. A
database created by this version is `auto_vacuum=INCREMENTAL` from its first page, so
`PRAGMA incremental_vacuum` can cut free pages off the end of the file a few at a time,
each step a short write transaction queued behind the others (docs/storage.md,
"Retention"). When little is left (after "delete all") one `VACUUM` does it at once; an
older file needs one to switch, done only when it is cheap enough.
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
CHEAP_VACUUM_BYTES = 16 << 20  # live data a VACUUM copies in about a tenth of a second


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
    """Every free page back to the filesystem: one `VACUUM` when that is cheap (or the only
    way: `vacuum_if_cheap`), else a step per write; then a checkpoint that truncates the
    WAL. A file from before incremental vacuum whose VACUUM is not cheap yet keeps its
    free pages for the next writes."""
    def vacuum(conn: sqlite3.Connection) -> bool:
        return vacuum_if_cheap(conn, state_dir)
    if not await store.outside_transaction(vacuum):
        return
    while await store.write(vacuum_step):  # noqa: ASYNC110 (a pause between steps, no wait)
        await asyncio.sleep(PAUSE)
    store.checkpoint_soon()


def vacuum_if_cheap(conn: sqlite3.Connection, state_dir: Path) -> bool:
    """On the writer thread, between transactions: a `VACUUM` now if it is cheap; whether
    incremental vacuum can give back what is still free.

    A VACUUM writes a copy of the pages in use (to a temp file, then through the WAL): up
    to twice the live data on top of the file, and new writes wait while it copies. It is
    cheap when little is left (at most CHEAP_VACUUM_BYTES, a quarter of the file or less:
    after "delete all", a fraction of a second where the steps took seconds). A file from
    before incremental vacuum needs one to switch, so it is also done when the live data
    is at most half the file (the deletion freed at least what the copy needs); otherwise
    the switch waits for a later deletion. Never without room on the disk for twice the
    live data."""
    on = incremental(conn)
    pages = int(conn.execute("PRAGMA page_count").fetchone()[0])
    live = used_bytes(conn)
    total = pages * int(conn.execute("PRAGMA page_size").fetchone()[0])
    cheap = live <= CHEAP_VACUUM_BYTES and live * 4 <= total
    if not cheap and (on or live * 2 > total):
        if not on:
            log.info("incremental vacuum not switched on yet: %d live of %d bytes", live, total)
        return on
    if shutil.disk_usage(state_dir).free < live * 2:
        log.info("no VACUUM: %d live bytes, too little free disk", live)
        return on
    if not on:
        conn.execute("PRAGMA auto_vacuum=INCREMENTAL")
    conn.execute("VACUUM")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return True
