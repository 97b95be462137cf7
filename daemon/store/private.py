"""History is private: the state directory 0700, the database and its files 0600, whatever
the umask (prompts and outputs live there). Loosened modes are set back at every open.

And it is where it says it is: no part of its path inside the project is a symbolic link
(`refuse_links`). A repository may carry a `.llamon` that points anywhere (a shared folder,
another project's history, a file to overwrite); the Playground refuses it, naming it,
rather than follow it."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from llamon_playground.common.config import Settings
from llamon_playground.daemon.errors import HistoryPathRefused

DIR_MODE = 0o700
FILE_MODE = 0o600
SQLITE_SUFFIXES = ("", "-wal", "-shm", "-journal")


def private_dir(path: Path) -> None:
    """`path` exists with mode 0700 (created so; a looser one of ours is tightened)."""
    path.mkdir(mode=DIR_MODE, exist_ok=True)  # mkdir's mode is masked by umask only downward
    _tighten(path, DIR_MODE)


def history_paths(settings: Settings) -> list[Path]:
    """Every path of history inside the project, outermost first."""
    db = settings.db_path
    return [settings.state_dir.parent, settings.state_dir, settings.files_dir,
            *(Path(f"{db}{suffix}") for suffix in SQLITE_SUFFIXES)]


def refuse_links(settings: Settings) -> None:
    """HistoryPathRefused, naming it (relative to the project), when a path of history is a
    symbolic link; one not there yet is fine (it will be created as a real one)."""
    for path in history_paths(settings):
        try:
            st = os.lstat(path)
        except (FileNotFoundError, NotADirectoryError):
            continue
        if stat.S_ISLNK(st.st_mode):
            name = path.relative_to(settings.project_dir)
            raise HistoryPathRefused(
                f"{name} is a symbolic link: the Playground never writes history through one "
                "(a cloned repository could point it anywhere). Remove it, or replace it with "
                "a real folder", path=str(name))


def check_blob_path(settings: Settings) -> None:
    """`refuse_links` as the OSError a failed blob write is (a run keeps going, its file
    said unavailable; a request answers 503 with the reason)."""
    try:
        refuse_links(settings)
    except HistoryPathRefused as exc:
        raise OSError(errno.ELOOP, exc.message) from exc


def prepare_state(settings: Settings) -> None:
    """Before SQLite opens the database: no link on history's path, the state and file dirs
    0700, the database file created 0600 (SQLite gives its -wal and -shm the database file's
    mode) and every file of it already there set to 0600."""
    refuse_links(settings)
    state = settings.state_dir
    if not state.parent.exists():
        state.parent.mkdir(mode=DIR_MODE, parents=True)
    private_dir(state)
    private_dir(settings.files_dir)
    refuse_links(settings)  # one made between the check and the mkdir is not followed either
    os.close(os.open(settings.db_path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW,
                     FILE_MODE))
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
