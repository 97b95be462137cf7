"""A history whose finished runs an earlier version kept as zstandard blocks, on the real
daemon: converted once, at start, to raw DEFLATE (the standard library's zlib), replayed and
exported byte for byte; a SIGKILL half-way through the conversion loses nothing, and the
next start finishes it.

zstandard is in the test extra for this: the fixture's blocks need it to be read, here as
on a user's machine during the conversion. Without it the daemon refuses to start
(tests/e2e/test_install.py, in a venv it is uninstalled from)."""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import zstandard

from llamon_playground.daemon.store.frames import frame_payload, split_frames
from llamon_playground.daemon.store.migrations import SCHEMA_VERSION
from tests.e2e.test_store_upkeep import compacted, event_content, export_all, raw_replay, read_db
from tests.support.api import Api
from tests.support.procs import Stack, stack_for
from tests.support.waiting import eventually

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
V8 = FIXTURES / "history_v8_zstd.sqlite3"  # written by that version: make_history_v8.py
Event = tuple[int, str, str, str, bytes]  # seq, run_id, kind, ts, frame


def v8_events() -> list[Event]:
    """Every event of the fixture, read with zstandard itself (not the daemon's code)."""
    unzstd = zstandard.ZstdDecompressor()
    conn = sqlite3.connect(f"file:{V8}?immutable=1", uri=True)
    try:
        out: list[Event] = [(r[0], r[1], r[2], r[3], bytes(r[4])) for r in conn.execute(
            "SELECT seq, run_id, kind, ts, frame FROM events")]
        for run_id, frames, stamps in conn.execute(
                "SELECT run_id, frames, stamps FROM event_blocks"):
            times = unzstd.decompress(stamps).decode().split("\n")
            for frame, ts in zip(split_frames(unzstd.decompress(frames)), times, strict=True):
                seq = int(frame[4:frame.index(b"\n")])
                kind = frame.split(b"\nevent: ")[1].split(b"\n")[0].decode()
                out.append((seq, run_id, kind, ts, frame))
    finally:
        conn.close()
    return sorted(out)


def install_v8_history(stack: Stack) -> None:
    state = stack.settings.db_path.parent
    state.mkdir(parents=True, mode=0o700)
    shutil.copyfile(V8, stack.settings.db_path)
    os.chmod(stack.settings.db_path, 0o600)
    shutil.copytree(FIXTURES / "history_v4_files", state / "files")


def codecs(stack: Stack) -> dict[str, int]:
    return dict(read_db(stack, "SELECT codec, COUNT(*) FROM event_blocks GROUP BY codec"))


def converted(stack: Stack) -> bool:
    return set(codecs(stack)) == {"deflate"}


@pytest.fixture
def v8_stack(project: Path, runtime_base: Path) -> Iterator[Stack]:
    with stack_for(project, runtime_base) as stack:
        install_v8_history(stack)
        stack.start_daemon()
        yield stack


async def test_zstandard_blocks_become_deflate_once_and_replay_byte_for_byte(
        v8_stack: Stack) -> None:
    events = v8_events()
    before = read_db(v8_stack, "SELECT run_id, first_seq, last_seq, events FROM event_blocks "
                               "ORDER BY run_id, first_seq")
    api = Api.for_socket(str(v8_stack.settings.socket_path))
    try:
        await eventually(lambda: converted(v8_stack), what="the blocks converted")
        assert read_db(v8_stack, "PRAGMA user_version")[0][0] == SCHEMA_VERSION
        # The same blocks, each now raw DEFLATE (read here with zlib itself), none left.
        assert read_db(v8_stack, "SELECT run_id, first_seq, last_seq, events FROM "
                                 "event_blocks ORDER BY run_id, first_seq") == before
        for run_id, first, last, frames, stamps in read_db(
                v8_stack, "SELECT run_id, first_seq, last_seq, frames, stamps FROM event_blocks"):
            held = [e for e in events if e[1] == run_id and first <= e[0] <= last]
            assert zlib.decompress(frames, -15) == b"".join(e[4] for e in held)
            assert zlib.decompress(stamps, -15).decode() == "\n".join(e[3] for e in held)
        assert read_db(v8_stack, "SELECT COUNT(*) FROM event_blocks INDEXED BY "
                                 "event_blocks_zstd WHERE codec = 'zstd'")[0][0] == 0
        for run_id in sorted({e[1] for e in events}):
            frames = [e for e in events if e[1] == run_id]
            assert await raw_replay(api, run_id) == b"".join(e[4] for e in frames)
            # Cursors at the blocks' edges (1,024 events a block), inside and at the end.
            cuts = {0, 1, len(frames) // 2, len(frames) - 2, len(frames) - 1}
            cuts |= {c for c in (1022, 1023, 1024, 2047, 2048) if c < len(frames)}
            for cut in sorted(cuts):
                rest = b"".join(e[4] for e in frames[cut + 1:])
                assert await raw_replay(api, run_id, after=frames[cut][0]) == rest
                assert await raw_replay(api, run_id,
                                        {"Last-Event-ID": str(frames[cut][0])}) == rest
        bundle = await export_all(api)
        assert [(e["seq"], e["run_id"], e["kind"], e["ts"], e["payload"])
                for e in bundle["events"]] == [
            (seq, run_id, kind, ts, frame_payload(frame))
            for seq, run_id, kind, ts, frame in events]
    finally:
        await api.close()


def as_earlier_version_wrote(stack: Stack) -> int:
    """Every block written again as the earlier version wrote it (zstandard, level 9; the
    tag its rows got from the migration): that version's history at a scale a kill can land
    in. The daemon is stopped meanwhile. The blocks rewritten."""
    zstd = zstandard.ZstdCompressor(level=9)
    conn = sqlite3.connect(stack.settings.db_path, isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
        rows = conn.execute("SELECT rowid, frames, stamps FROM event_blocks").fetchall()
        conn.executemany(
            "UPDATE event_blocks SET frames = ?, stamps = ?, codec = 'zstd' WHERE rowid = ?",
            [(zstd.compress(zlib.decompress(f, -15)), zstd.compress(zlib.decompress(s, -15)),
              rowid) for rowid, f, s in rows])
        conn.execute("COMMIT")
    finally:
        conn.close()
    return len(rows)


async def replays(api: Api, run_ids: list[str]) -> dict[str, bytes]:
    return {run_id: await raw_replay(api, run_id) for run_id in run_ids}


async def test_a_sigkill_during_the_conversion_loses_nothing_and_the_next_start_finishes(
        v8_stack: Stack) -> None:
    api = Api.for_socket(str(v8_stack.settings.socket_path))
    try:
        await eventually(lambda: converted(v8_stack), what="the blocks converted")
        bundle = await export_all(api)
        for _ in range(30):  # 12 blocks a copy: 372 in all
            await api.ok("POST", "bundles/import", bundle, status=201)
        await eventually(lambda: compacted(v8_stack), what="the imports compacted", timeout=60)
        run_ids = [r[0] for r in read_db(v8_stack, "SELECT id FROM runs ORDER BY rowid")]
        before = await replays(api, run_ids)
        bundle_before = await export_all(api)
    finally:
        await api.close()
    assert v8_stack.daemon is not None
    v8_stack.daemon.stop()
    blocks = as_earlier_version_wrote(v8_stack)
    assert blocks > 300
    v8_stack.start_daemon()  # the conversion starts at boot: kill it half-way
    await eventually(lambda: codecs(v8_stack), lambda c: c.get("deflate", 0) >= 16,
                     what="the conversion under way", interval=0.002)
    v8_stack.daemon.signal(signal.SIGKILL)
    v8_stack.daemon.wait(10)
    left = codecs(v8_stack)
    assert left.get("zstd", 0) > 0 and sum(left.values()) == blocks, left
    v8_stack.start_daemon()
    api = Api.for_socket(str(v8_stack.settings.socket_path))
    try:
        # Both codecs read while the conversion goes on: the same bytes either way.
        assert await replays(api, run_ids) == before
        await eventually(lambda: converted(v8_stack), what="the conversion finished",
                         timeout=60)
        assert sum(codecs(v8_stack).values()) == blocks
        assert await replays(api, run_ids) == before
        after: dict[str, Any] = await export_all(api)
        assert event_content(after) == event_content(bundle_before)
    finally:
        await api.close()
