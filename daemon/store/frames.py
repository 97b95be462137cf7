"""An event's SSE frame: built once when the event commits, and the only copy of it stored.

Replay copies stored bytes instead of building each frame again (building them was most of
what a replay cost). The frame's `data:` line is the event's whole JSON (seq, run_id and kind
first, then the payload's fields), so the payload is not kept beside it: whoever needs the
event's fields reads them from that line, in Python (`frame_data`) or in SQL (`DATA_SQL`).
The writer thread, boot recovery and bundle import (whose rows are renumbered) all build
frames here.

A finished run's events are kept compact, their frames in deflate blocks. A live run's
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

Each block names its codec (`event_blocks.codec`). Blocks are written as raw DEFLATE streams
with the standard library's zlib (`deflate`); blocks an earlier version wrote with zstandard
say `zstd` and are read with it, imported only then, while the compactor converts them once
(upkeep/recoding.py).
Where such blocks are left and zstandard is not installed, the store refuses to open
(`refuse_unreadable_blocks`), naming the command that installs it: nothing is lost or
half-read.
"""

from __future__ import annotations

import shlex
import sqlite3
import sys
import threading
import zlib
from collections.abc import Iterator
from typing import Any

import orjson

from llamon_playground.common.contract import TERMINAL_STATUSES
from llamon_playground.daemon.errors import BlockCodecMissing, StoreError

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
# Measured on 10,000 streamed deltas in 1,024-event blocks (docs/storage.md, "Why deflate"):
# level 9 leaves 3 % fewer bytes than 6 for about a quarter more CPU, about what zstandard's
# level 9 cost; a preset dictionary saved 1.5 % and would have to stay fixed forever.
ZLIB_LEVEL = 9
# Raw DEFLATE (no zlib header, no Adler-32: zstandard's blocks carried no checksum either):
# the checksum was more than half of what inflating a block cost (measured 2.5x faster).
RAW_DEFLATE = -15
DEFLATE = "deflate"  # what every block is written with
ZSTD = "zstd"  # blocks an earlier version wrote: read with zstandard until converted
ZSTD_INSTALL = "zstandard>=0.22"

INSERT_BLOCK = ("INSERT INTO event_blocks (run_id, first_seq, last_seq, events, terminal, "
                "frames, stamps, codec) VALUES (?, ?, ?, ?, ?, ?, ?, ?)")
BLOCK_AFTER_SQL = ("SELECT first_seq, terminal, frames, codec FROM event_blocks "
                   "WHERE run_id = ? AND last_seq > ? ORDER BY last_seq LIMIT 1")
# Counted through the partial index `event_blocks_zstd`: no table scan once none is left.
ZSTD_BLOCKS_SQL = f"SELECT COUNT(*) FROM event_blocks WHERE codec = '{ZSTD}'"

_local = threading.local()


def zstd_install_command() -> str:
    """The one command that installs zstandard for this daemon's interpreter."""
    return shlex.join([sys.executable, "-m", "pip", "install", ZSTD_INSTALL])


def _zstd_missing(what: str) -> str:
    return (f"history holds {what} compressed with zstandard by an earlier version, and "
            "zstandard is not installed; install it once, for their one-time conversion to "
            f"deflate, then start again: {zstd_install_command()} "
            "(their events are kept as they are)")


def _zstd_inflate(data: bytes) -> bytes:
    # zstandard's decompressors are not to be shared between threads: one per thread.
    d = getattr(_local, "zstd", None)
    if d is None:
        try:
            import zstandard
        except ImportError as exc:
            raise BlockCodecMissing(_zstd_missing("event blocks")) from exc
        d = _local.zstd = zstandard.ZstdDecompressor()
    out: bytes = d.decompress(data)
    return out


def zstd_available() -> bool:
    """Whether zstandard can be imported (blocks an earlier version wrote need it)."""
    try:
        import zstandard  # noqa: F401
    except ImportError:
        return False
    return True


def refuse_unreadable_blocks(conn: sqlite3.Connection) -> int:
    """The zstandard blocks left to convert; raises BlockCodecMissing when there are some and
    zstandard is not installed (the store must not open: those runs could not be read)."""
    left = int(conn.execute(ZSTD_BLOCKS_SQL).fetchone()[0])
    if left and not zstd_available():
        raise BlockCodecMissing(_zstd_missing(f"{left} event blocks"))
    return left


def deflate(data: bytes) -> bytes:
    """`data` as a raw DEFLATE stream (a block's frames or stamps)."""
    c = zlib.compressobj(ZLIB_LEVEL, zlib.DEFLATED, RAW_DEFLATE)
    return c.compress(data) + c.flush()


def pack(rows: list[EventRow], terminal: bool
         ) -> tuple[str, int, int, int, int, bytes, bytes, str]:
    """One block's row from consecutive event rows of one run (seq, run_id, kind, ts, frame)."""
    return (rows[0][1], rows[0][0], rows[-1][0], len(rows), int(terminal),
            deflate(b"".join(r[4] for r in rows)),
            deflate("\n".join(r[3] for r in rows).encode()), DEFLATE)


def inflate(data: bytes, codec: str) -> bytes:
    """A block's frames or stamps, uncompressed with the codec the block names."""
    if codec == DEFLATE:
        return zlib.decompress(data, RAW_DEFLATE)
    if codec == ZSTD:
        return _zstd_inflate(data)
    raise StoreError(f"an event block names an unknown codec {codec!r}")


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


def block_page(row: tuple[int, int, bytes, str] | sqlite3.Row, after: int
               ) -> tuple[bytes, int, bool] | None:
    """A replay page from a block row (first_seq, terminal, frames, codec): (frames, last
    seq, terminal), or None when nothing of it follows the cursor."""
    first_seq, terminal, packed, codec = row[0], row[1], row[2], row[3]
    data = frames_after_cursor(inflate(bytes(packed), codec), int(first_seq), after)
    if not data:
        return None
    start = data.rfind(b"\n\nid: ", 0, len(data) - 2)  # the last frame's start
    last = frame_seq(data[start + 2:] if start >= 0 else data)
    return data, last, bool(terminal)


def unpack(run_id: str, frames: bytes, stamps: bytes, codec: str) -> Iterator[EventRow]:
    """A block's events as rows (seq, run_id, kind, ts, frame), for bundles and recovery."""
    times = inflate(stamps, codec).decode().split("\n")
    for frame, ts in zip(split_frames(inflate(frames, codec)), times, strict=True):
        yield frame_seq(frame), run_id, frame_kind(frame), ts, frame


def stored_events(conn: sqlite3.Connection, run_ids: list[str]) -> list[EventRow]:
    """Every event of these runs, wherever it is kept (blocks or rows), ordered by seq.
    Run it inside one read transaction: the two tables are then one snapshot."""
    out: list[EventRow] = []
    for start in range(0, len(run_ids), 500):
        chunk = run_ids[start:start + 500]
        marks = ", ".join("?" * len(chunk))
        for run_id, frames, stamps, codec in conn.execute(
                "SELECT run_id, frames, stamps, codec FROM event_blocks "
                f"WHERE run_id IN ({marks})", chunk):
            out.extend(unpack(run_id, bytes(frames), bytes(stamps), codec))
        out.extend((int(r[0]), r[1], r[2], r[3], bytes(r[4])) for r in conn.execute(
            f"SELECT seq, run_id, kind, ts, frame FROM events WHERE run_id IN ({marks})",
            chunk))
    out.sort(key=lambda e: e[0])
    return out
