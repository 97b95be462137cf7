"""The WAL keeper checkpoints beside the writer, but not under it: a due checkpoint waits for
a quiet writer (its fsync would slow the commit beside it, most likely the next run's
creation), unless the WAL grows too long or the keeper closes."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from llamon_playground.daemon.store import wal
from llamon_playground.daemon.store.wal import CHECKPOINT_FRAMES, WalKeeper, open_writer
from tests.support.waiting import eventually


class Writer:
    """The writer's side: commits of whole pages, each followed by the keeper's look."""

    def __init__(self, db: str, keeper: WalKeeper) -> None:
        self.conn, _ = open_writer(db, 5000)
        self.conn.execute("CREATE TABLE pad (id INTEGER PRIMARY KEY, b BLOB)")
        # The schema's own frames (every migration) copied back first: the WAL then holds
        # only the frames the test's commits write, however many migrations there are.
        self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        self.keeper = keeper

    def commit(self, pages: int = 1) -> None:
        self.conn.execute("BEGIN IMMEDIATE")
        self.conn.executemany("INSERT INTO pad (b) VALUES (?)", [(b"x" * 3500,)] * pages)
        self.conn.execute("COMMIT")
        self.keeper.after_commit()


@pytest.fixture
def rig(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Writer]:
    # Wide margins, so that a slow moment of this machine cannot pass for a quiet writer.
    monkeypatch.setattr(wal, "QUIET_WRITER", 0.4)
    monkeypatch.setattr(wal, "MAX_DEFER", 30.0)
    db = str(tmp_path / "h.sqlite3")
    sqlite3.connect(db).execute("PRAGMA journal_mode=WAL").connection.close()
    keeper = WalKeeper(db, 5000)
    keeper.open()
    writer = Writer(db, keeper)
    try:
        yield writer
    finally:
        keeper.close()
        writer.conn.close()


async def test_a_due_checkpoint_waits_until_the_writer_is_quiet(rig: Writer) -> None:
    rig.commit(CHECKPOINT_FRAMES + 8)  # due from here on
    for _ in range(20):  # a commit every few ms: never quiet for QUIET_WRITER
        rig.commit()
        assert rig.keeper.checkpoints == 0
    await eventually(lambda: rig.keeper.checkpoints, lambda n: n == 1)
    assert rig.keeper.waiting_frames() == 0


def test_a_long_wal_is_checkpointed_though_the_writer_is_busy(rig: Writer) -> None:
    # Commits back to back, never quiet: the keeper goes ahead once URGENT_FRAMES wait.
    deadline = time.monotonic() + 30
    while rig.keeper.checkpoints == 0 and time.monotonic() < deadline:
        rig.commit(4)
    assert rig.keeper.checkpoints >= 1


def test_closing_runs_a_checkpoint_that_waited_for_a_quiet_writer(rig: Writer) -> None:
    rig.commit(CHECKPOINT_FRAMES + 8)
    rig.commit()  # it waits for a quiet writer (0.4 s here) ...
    rig.keeper.close()  # ... and runs at once when the keeper closes
    assert rig.keeper.checkpoints == 1
