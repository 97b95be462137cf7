"""The per-project runtime directory: exclusive lock, Unix socket and discovery file."""

from __future__ import annotations

import fcntl
import os
import stat
from dataclasses import dataclass
from pathlib import Path

import orjson

from llamon_playground.common.config import Settings


def ensure_private_dir(path: Path) -> None:
    """Create `path` (and parents) 0700; refuse a symlink or a directory owned by someone else."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        raise PermissionError(f"{path} is not a real directory")
    if st.st_uid != os.getuid():
        raise PermissionError(f"{path} belongs to uid {st.st_uid}, not us")
    if stat.S_IMODE(st.st_mode) != 0o700:
        os.chmod(path, 0o700)


@dataclass
class RuntimeLock:
    """Holds the exclusive flock that makes this process the project's only daemon."""

    fd: int

    def release(self) -> None:
        try:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
        finally:
            os.close(self.fd)


MAX_SOCKET_PATH = 107  # sockaddr_un holds 108 bytes, NUL included


class AlreadyRunning(Exception):
    """Another daemon holds the lock for this project."""


class RuntimeDirTooLong(Exception):
    """The runtime base folder is so deep that the socket path would not fit."""


def acquire_lock(settings: Settings) -> RuntimeLock:
    """Take the project's daemon lock in its private runtime dir; AlreadyRunning when another
    daemon holds it, RuntimeDirTooLong when the socket path would not fit."""
    if len(str(settings.socket_path).encode()) > MAX_SOCKET_PATH:
        raise RuntimeDirTooLong(
            f"{settings.socket_path} is longer than a Unix socket path may be "
            f"({MAX_SOCKET_PATH} bytes); set LLAMON_PLAYGROUND_RUNTIME_DIR to a shorter folder")
    ensure_private_dir(settings.runtime_base)
    ensure_private_dir(settings.runtime_dir)
    fd = os.open(settings.lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError as exc:
        os.close(fd)
        raise AlreadyRunning(f"a daemon already serves {settings.project_dir}") from exc
    return RuntimeLock(fd)


def write_discovery(settings: Settings) -> None:
    """Write the discovery file (pid, project, socket, version) atomically, readable by its owner
    only."""
    doc = {
        "pid": os.getpid(),
        "project": str(settings.project_dir),
        "socket": str(settings.socket_path),
        "version": settings.version,
    }
    tmp = settings.discovery_path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(orjson.dumps(doc))
    os.replace(tmp, settings.discovery_path)


def remove_discovery(settings: Settings) -> None:
    """Remove the discovery file and the socket (either may be gone already)."""
    for path in (settings.discovery_path, settings.socket_path):
        try:
            path.unlink()
        except FileNotFoundError:
            pass
