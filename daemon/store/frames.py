"""An event's SSE frame: built once when the event commits, and the only copy of it stored.

Replay copies stored bytes instead of building each frame again (building them was most of
what a replay cost). The frame's `data:` line is the event's whole JSON (seq, run_id and kind
first, then the payload's fields), so the payload is not kept beside it: whoever needs the
event's fields reads them from that line, in Python (`frame_data`) or in SQL (`DATA_SQL`).
The writer thread, boot recovery and bundle import (whose rows are renumbered) all build
frames here.

A finished run's events are kept compact, their frames in zstandard blocks. A live run's
events are rows of `events`, one frame each (what a live replay copies). Once
the run has ended, the compactor (`daemon/store/upkeep/compaction.py`) moves every event before
its terminal `run.status` into `event_blocks`: up to BLOCK_EVENTS consecutive events of
one run per row, their frames concatenated and compressed (`frames`), their commit times
one per line and compressed (`stamps`). The terminal `run.status` stays a row of `events`,
so everything that asks "how did this run end" (boot recovery, the 204 of a finished
replay) reads it as before.

A run's blocks always hold a prefix of its events and `events` the rest: compaction moves
events oldest first, in the transaction that writes their blocks. A replay page therefore
reads `events` first and the blocks second (each statement is its own snapshot): whatever
moved between the two reads is found in the blocks, so a cursor sees no gap and no
duplicate across the hand-over (`frames_page`).

The frames inside a block are the same bytes `events.frame` held: a frame ends with a blank
line and its data line is one line of JSON, so `\\n\\nid: ` only ever starts the next frame.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from typing import Any

import orjson
import zstandard

from llamon_playground.common.contract import TERMINAL_STATUSES

EventRow = tuple[int, str, str, str, bytes]  # a row of `events`: seq, run_id, kind, ts, frame
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


# -- blocks: a finished run's frames, compressed -----------------------------------

BLOCK_EVENTS = 1024
BLOCK_BYTES = 256 * 1024  # raw frames per block: a replay page, and what one read inflates
ZSTD_LEVEL = 9  # measured: 3 costs ~20 % more bytes per delta, 19 five times the CPU for ~5 %

INSERT_BLOCK = ("INSERT INTO event_blocks (run_id, first_seq, last_seq, events, terminal, "
                "frames, stamps) VALUES (?, ?, ?, ?, ?, ?, ?)")
BLOCK_AFTER_SQL = ("SELECT first_seq, terminal, frames FROM event_blocks "
                   "WHERE run_id = ? AND last_seq > ? ORDER BY last_seq LIMIT 1")

_local = threading.local()


def _compressor() -> zstandard.ZstdCompressor:
    # zstandard's (de)compressors are not to be shared between threads: one per thread.
    c: zstandard.ZstdCompressor | None = getattr(_local, "c", None)
    if c is None:
        c = _local.c = zstandard.ZstdCompressor(level=ZSTD_LEVEL)
    return c


def _decompressor() -> zstandard.ZstdDecompressor:
    d: zstandard.ZstdDecompressor | None = getattr(_local, "d", None)
    if d is None:
        d = _local.d = zstandard.ZstdDecompressor()
    return d


def pack(rows: list[EventRow], terminal: bool) -> tuple[str, int, int, int, int, bytes, bytes]:
    """One block's row from consecutive event rows of one run (seq, run_id, kind, ts, frame)."""
    c = _compressor()
    return (rows[0][1], rows[0][0], rows[-1][0], len(rows), int(terminal),
            c.compress(b"".join(r[4] for r in rows)),
            c.compress("\n".join(r[3] for r in rows).encode()))


def inflate(data: bytes) -> bytes:
    return _decompressor().decompress(data)


def split_frames(frames: bytes) -> list[bytes]:
    """The frames of a block, each with its closing blank line."""
    if not frames:
        return []
    pieces = frames[:-2].split(b"\n\nid: ")
    return [pieces[0] + b"\n\n", *(b"id: " + p + b"\n\n" for p in pieces[1:])]


def frame_seq(frame: bytes) -> int:
    return int(frame[4:frame.index(b"\n")])


def frame_kind(frame: bytes) -> str:
    start = frame.index(b"\nevent: ") + 8
    return frame[start:frame.index(b"\n", start)].decode()


def frames_after_cursor(frames: bytes, first_seq: int, after: int) -> bytes:
    """The part of a block's frames after event `after` (all of them when the block starts
    later). A cursor inside a block is usually one of its seqs: found with one search."""
    if after < first_seq:
        return frames
    needle = b"\n\nid: %d\n" % after
    at = frames.find(needle)
    if at >= 0:
        end = frames.find(b"\n\n", at + len(needle))
        return frames[end + 2:]
    offset = 0
    for frame in split_frames(frames):
        if frame_seq(frame) > after:
            return frames[offset:]
        offset += len(frame)
    return b""


def block_page(row: tuple[int, int, bytes] | sqlite3.Row, after: int
               ) -> tuple[bytes, int, bool] | None:
    """A replay page from a block row (first_seq, terminal, frames): (frames, last seq,
    terminal), or None when nothing of it follows the cursor."""
    first_seq, terminal, packed = row[0], row[1], row[2]
    data = frames_after_cursor(inflate(bytes(packed)), int(first_seq), after)
    if not data:
        return None
    start = data.rfind(b"\n\nid: ", 0, len(data) - 2)  # the last frame's start
    last = frame_seq(data[start + 2:] if start >= 0 else data)
    return data, last, bool(terminal)


def unpack(run_id: str, frames: bytes, stamps: bytes) -> Iterator[EventRow]:
    """A block's events as rows (seq, run_id, kind, ts, frame), for bundles and recovery."""
    times = inflate(stamps).decode().split("\n")
    for frame, ts in zip(split_frames(inflate(frames)), times, strict=True):
        yield frame_seq(frame), run_id, frame_kind(frame), ts, frame


def stored_events(conn: sqlite3.Connection, run_ids: list[str]) -> list[EventRow]:
    """Every event of these runs, wherever it is kept (blocks or rows), ordered by seq.
    Run it inside one read transaction: the two tables are then one snapshot."""
    out: list[EventRow] = []
    for start in range(0, len(run_ids), 500):
        chunk = run_ids[start:start + 500]
        marks = ", ".join("?" * len(chunk))
        for run_id, frames, stamps in conn.execute(
                f"SELECT run_id, frames, stamps FROM event_blocks WHERE run_id IN ({marks})",
                chunk):
            out.extend(unpack(run_id, bytes(frames), bytes(stamps)))
        out.extend((int(r[0]), r[1], r[2], r[3], bytes(r[4])) for r in conn.execute(
            f"SELECT seq, run_id, kind, ts, frame FROM events WHERE run_id IN ({marks})",
            chunk))
    out.sort(key=lambda e: e[0])
    return out
