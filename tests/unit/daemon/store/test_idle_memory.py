"""An idle store holds no page cache: what a day's runs filled is given back once the writer
idles (the daemon lives for days; docs/benchmarks.md, `up_pss_after_runs`)."""

from __future__ import annotations

import ctypes
import sqlite3
from pathlib import Path

import pytest

from llamon_playground.common.config import build_settings
from llamon_playground.daemon.store.database import Store
from tests.support.waiting import eventually

MB = 1 << 20


def _sqlite_memory_used() -> int:
    """What SQLite has allocated in this process (caches, statements), by its own count."""
    try:
        lib = ctypes.CDLL("libsqlite3.so.0")  # the library the sqlite3 module links, if shared
    except OSError:
        pytest.skip("no shared libsqlite3 to ask (a static build counts apart)")
    lib.sqlite3_memory_used.restype = ctypes.c_int64
    return int(lib.sqlite3_memory_used())


async def test_the_page_caches_are_emptied_once_the_writer_idles(tmp_path: Path) -> None:
    settings = build_settings(tmp_path, {"LLAMON_PLAYGROUND_RUNTIME_DIR": str(tmp_path / "rt")})
    store = Store(settings)
    await store.open()
    try:
        for n in range(3000):
            store.append_event("r", "output.delta", {"text": "x" * 1000, "n": n})
        await store.flush()
        assert len(await store.events_after("r", 0, 5000)) == 3000  # through the reader
        filled = _sqlite_memory_used()
        if filled < 3 * MB:
            pytest.skip(f"this sqlite3 ({sqlite3.sqlite_version}) is not the library asked")
        # The caches go within a second or so of the last write (IDLE_CHECKPOINT).
        await eventually(_sqlite_memory_used, lambda used: used < filled - 2 * MB,
                         f"SQLite's memory ({filled / MB:.1f} MB) to be given back",
                         timeout=10)
    finally:
        await store.close()
