"""An event's SSE frame: built once when the event commits, and the only copy of it stored.

Replay copies stored bytes instead of building each frame again (building them was most of
what a replay cost). The frame's `data:` line is the event's whole JSON (seq, run_id and kind
first, then the payload's fields), so the payload is not kept beside it: whoever needs the
event's fields reads them from that line, in Python (`frame_data`) or in SQL (`DATA_SQL`).
The writer thread, boot recovery and bundle import (whose rows are renumbered) all build
frames here.
"""

from __future__ import annotations

from typing import Any

import orjson

from llamon_playground.common.contract import TERMINAL_STATUSES

INSERT_EVENTS = "INSERT INTO events (seq, run_id, kind, ts, frame) VALUES (?, ?, ?, ?, ?)"
# The keys the frame's data JSON leads with (columns too); a payload never repeats them.
EVENT_COLUMNS_IN_DATA = ("seq", "run_id", "kind")


def build_frame(seq: int, run_id: str, kind: str, payload: bytes) -> bytes:
    """`id: seq`, `event: kind` and the `data:` JSON (seq, run_id and kind first, then the
    payload's fields), with the blank line that ends an SSE frame."""
    k = kind.encode()
    if payload == b"{}":
        return b'id: %d\nevent: %s\ndata: {"seq":%d,"run_id":"%s","kind":"%s"}\n\n' % (
            seq, k, seq, run_id.encode(), k)
    return b'id: %d\nevent: %s\ndata: {"seq":%d,"run_id":"%s","kind":"%s",%b\n\n' % (
        seq, k, seq, run_id.encode(), k, memoryview(payload)[1:])  # type: ignore[str-format]


def frame_data(frame: bytes) -> bytes:
    """The frame's `data:` JSON, the event's fields. The lines before it are `id:` and
    `event:` (neither holds a newline) and the frame ends with the blank line."""
    return frame[frame.index(b"\ndata: ") + 7:-2]


def payload_json(frame: bytes) -> bytes:
    """The payload's compact JSON (what was appended), cut from the data JSON: the fields
    after `"kind":"..."` (neither the run id nor the kind holds a quote)."""
    data = frame_data(frame)
    rest = data[data.index(b'"', data.index(b'"kind":"') + 8) + 1:]
    return b"{}" if rest == b"}" else b"{" + rest[1:]


def frame_payload(frame: bytes) -> dict[str, Any]:
    """The event's own fields, without the seq, run_id and kind the data JSON leads with."""
    doc: dict[str, Any] = orjson.loads(frame_data(frame))
    for key in EVENT_COLUMNS_IN_DATA:
        del doc[key]
    return doc


# The data JSON of a row's frame, as SQL text: it starts after `id: <seq>\nevent: <kind>\n
# data: ` (19 bytes besides seq and kind); the blank line after it is JSON whitespace.
DATA_SQL = "CAST(substr(frame, length(seq) + length(CAST(kind AS BLOB)) + 20) AS TEXT)"
STATUS_SQL = f"json_extract({DATA_SQL}, '$.status')"

# The events whose terminal status ends a stream: a run's, and a suite run's (its progress
# is stored as events under the suite run's id).
STATUS_KINDS = ("run.status", "suite.status")
STATUS_KINDS_SQL = "('run.status', 'suite.status')"
TERMINAL_SQL = "(" + ", ".join(f"'{s.value}'" for s in sorted(TERMINAL_STATUSES)) + ")"
# The stored frames of a page, in one query (per-row Python work is what limited replay).
FRAMES_SQL = f"""
SELECT CAST(group_concat(frame, '') AS BLOB), max(seq), max(terminal) FROM (
  SELECT seq, frame,
    CASE WHEN kind IN {STATUS_KINDS_SQL} THEN {STATUS_SQL} IN {TERMINAL_SQL} ELSE 0 END
      AS terminal
  FROM events WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT ?)
"""
