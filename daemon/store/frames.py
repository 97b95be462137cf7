"""An event's SSE frame, built once when the event commits and stored beside it.

Replay then copies stored bytes instead of building each frame again (building them was
most of what a replay cost). The writer thread, boot recovery and bundle import (whose
rows are renumbered) all build it here. Rows written before the frame column existed have
NULL there; the replay query builds theirs in SQL with exactly the same bytes (a test holds
the two builders together).
"""

from __future__ import annotations

from llamon_playground.common.contract import TERMINAL_STATUSES


def build_frame(seq: int, run_id: str, kind: str, payload: bytes) -> bytes:
    """`id: seq`, `event: kind` and the `data:` JSON (seq, run_id and kind first, then the
    payload's fields), with the blank line that ends an SSE frame."""
    k = kind.encode()
    if payload == b"{}":
        return b'id: %d\nevent: %s\ndata: {"seq":%d,"run_id":"%s","kind":"%s"}\n\n' % (
            seq, k, seq, run_id.encode(), k)
    return b'id: %d\nevent: %s\ndata: {"seq":%d,"run_id":"%s","kind":"%s",%b\n\n' % (
        seq, k, seq, run_id.encode(), k, memoryview(payload)[1:])  # type: ignore[str-format]


# The same bytes built by SQLite, for rows whose stored frame is NULL; printf() is about
# twice as fast as chains of || here.
FRAME_SQL = """printf('id: %d' || char(10) || 'event: %s' || char(10)
           || 'data: {"seq":%d,"run_id":"%s","kind":"%s"%s' || char(10) || char(10),
           seq, kind, seq, run_id, kind,
           CASE WHEN length(payload) = 2 THEN '}'
                ELSE ',' || substr(CAST(payload AS TEXT), 2) END)"""


TERMINAL_SQL = "(" + ", ".join(f"'{s.value}'" for s in sorted(TERMINAL_STATUSES)) + ")"
# The stored frames of a page, in one query (per-row Python work is what limited replay);
# a row without one (older than the column, or imported) has it built by FRAME_SQL.
FRAMES_SQL = f"""
SELECT CAST(group_concat(frame, '') AS BLOB), max(seq), max(terminal) FROM (
  SELECT seq, COALESCE(frame, {FRAME_SQL}) AS frame,
    CASE WHEN kind = 'run.status'
         THEN json_extract(CAST(payload AS TEXT), '$.status') IN {TERMINAL_SQL}
         ELSE 0 END AS terminal
  FROM events WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT ?)
"""
