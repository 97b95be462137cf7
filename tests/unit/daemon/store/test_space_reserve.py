"""The room history keeps for a run's ending: an allocated file, given back only for a write
that failed for want of space, and taken again only where it fits."""

from __future__ import annotations

import errno
import os
import sqlite3
from pathlib import Path

from llamon_playground.daemon.store.wal import SpaceReserve, out_of_space


def full_disk_error() -> sqlite3.OperationalError:
    """SQLite's own 'database or disk is full', raised for real on a 1-page size limit."""
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute("PRAGMA max_page_count = 2")
        conn.execute("CREATE TABLE t (b BLOB)")
        conn.execute("INSERT INTO t VALUES (zeroblob(100000))")
    except sqlite3.OperationalError as exc:
        return exc
    finally:
        conn.close()
    raise AssertionError("the insert should not fit")


def test_a_full_disk_is_told_from_other_write_failures() -> None:
    assert out_of_space(full_disk_error())
    assert out_of_space(OSError(errno.ENOSPC, "No space left on device"))
    assert not out_of_space(OSError(errno.EACCES, "Permission denied"))
    assert not out_of_space(sqlite3.OperationalError("database is locked"))


def test_the_reserve_is_allocated_and_given_back_only_for_want_of_space(tmp_path: Path) -> None:
    reserve = SpaceReserve(tmp_path / "history.reserve", 64 * 1024)
    assert reserve.take() and reserve.held
    stat = os.stat(reserve.path)
    assert stat.st_size == 64 * 1024 and stat.st_blocks * 512 >= 64 * 1024  # not sparse
    assert stat.st_mode & 0o777 == 0o600
    assert not reserve.give_back_for(sqlite3.OperationalError("database is locked"))
    assert reserve.held and reserve.path.exists()
    assert reserve.give_back_for(full_disk_error())
    assert not reserve.held and not reserve.path.exists()
    assert not reserve.give_back_for(full_disk_error())  # nothing left to give
    assert reserve.take() and reserve.held


def test_a_reserve_that_does_not_fit_leaves_nothing_behind(tmp_path: Path) -> None:
    # Bigger than any disk: the allocation fails, as on a full one.
    reserve = SpaceReserve(tmp_path / "history.reserve", 1 << 60)
    assert not reserve.take()
    assert not reserve.held and not reserve.path.exists()
