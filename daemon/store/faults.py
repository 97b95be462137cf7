"""Which write failures are the storage's (retry later) and which are the op's own."""

from __future__ import annotations

import sqlite3

# SQLite's primary result codes for a full, failing, locked or read-only disk.
STORAGE_FAULT_CODES = frozenset({5, 6, 8, 10, 13, 14})


def is_storage_fault(exc: BaseException) -> bool:
    """Whether an op failed because of the storage (retry later), not because of itself."""
    if isinstance(exc, OSError):
        return True
    code = getattr(exc, "sqlite_errorcode", None)
    return isinstance(exc, sqlite3.OperationalError) and code is not None \
        and code & 0xFF in STORAGE_FAULT_CODES
