"""History is private: the state directory 0700, the database and its files 0600, whatever
the umask (prompts and outputs live there). Loosened modes are set back at every open."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from llamon_playground.common.config import Settings

DIR_MODE = 0o700
FILE_MODE = 0o600
SQLITE_SUFFIXES = ("", "-wal", "-shm", "-journal")


def private_dir(path: Path) -> None:
    """`path` exists with mode 0700 (created so; a looser one of ours is tightened)."""
    path.mkdir(mode=DIR_MODE, exist_ok=True)  # mkdir's mode is masked by umask only downward
    _tighten(path, DIR_MODE)


def prepare_state(settings: Settings) -> None:
    """Before SQLite opens the database: the state and file dirs 0700, the database file
    created 0600 (SQLite gives its -wal and -shm the database file's mode) and every file
    of it already there set to 0600."""
    state = settings.state_dir
    if not state.parent.exists():
        state.parent.mkdir(mode=DIR_MODE, parents=True)
    private_dir(state)
    private_dir(settings.files_dir)
    os.close(os.open(settings.db_path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, FILE_MODE))
    for suffix in SQLITE_SUFFIXES:
        _tighten(Path(f"{settings.db_path}{suffix}"), FILE_MODE)


def _tighten(path: Path, mode: int) -> None:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(st.st_mode) or st.st_uid != os.getuid():
        return  # not ours to change
    if stat.S_IMODE(st.st_mode) & ~mode:
        os.chmod(path, stat.S_IMODE(st.st_mode) & mode)
