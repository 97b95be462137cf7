"""The one-time conversion of zstandard blocks (written by an earlier version) to deflate.

The compactor's sweep runs it first, a few blocks per write transaction, until none is
left. Each step rewrites whole blocks and their codec tag together, so a kill loses at most
the step in progress (rolled back whole) and the next start finds what is left through the
partial index `event_blocks_zstd` (empty afterwards, so later sweeps pay one index probe).
Replays read both codecs meanwhile: a block is either still zstandard or already deflate,
never half of each. The store refuses to open while such blocks exist and zstandard is not
installed (frames.refuse_unreadable_blocks), so this never meets one it cannot read.
"""

from __future__ import annotations

import sqlite3

from llamon_playground.daemon.store.frames import DEFLATE, ZSTD, deflate, inflate

STEP_BLOCKS = 8  # ~8,000 events a transaction: ~15-30 ms of the writer's time


def recode_step(conn: sqlite3.Connection) -> int:
    """Convert up to STEP_BLOCKS zstandard blocks to deflate, inside the writer's transaction;
    the number converted (0: none is left)."""
    rows = conn.execute(  # the codec a literal: the partial index's own condition
        f"SELECT rowid, frames, stamps FROM event_blocks WHERE codec = '{ZSTD}' LIMIT ?",
        (STEP_BLOCKS,)).fetchall()
    conn.executemany(
        "UPDATE event_blocks SET frames = ?, stamps = ?, codec = ? WHERE rowid = ?",
        [(deflate(inflate(bytes(frames), ZSTD)), deflate(inflate(bytes(stamps), ZSTD)), DEFLATE,
          rowid) for rowid, frames, stamps in rows])
    return len(rows)
