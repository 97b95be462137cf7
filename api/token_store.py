"""Where the front's token comes from and where it is kept.

One token per project, shared by every front that serves it, so the one
`llamon-playground token` prints opens them all. It is kept across front restarts (a
re-run `up`, a service's Restart=on-failure): an open browser tab reconnects with the
cookie or token it has. `llamon-playground token --rotate` replaces it; running fronts
adopt the new one at their next request. The environment may give one instead
(`LLAMON_PLAYGROUND_TOKEN`, or a file named by `LLAMON_PLAYGROUND_TOKEN_FILE`). It lives in
`<runtime dir>/front.token`, 0600 in the 0700 runtime directory.

Running fronts hold `front.lock` shared; picking or replacing the token happens under the
exclusive `front.start.lock`, so two fronts starting at once agree on one token.
"""

from __future__ import annotations

import fcntl
import os
import secrets
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from llamon_playground.common.config import ENV_TOKEN, Settings
from llamon_playground.common.runtime_dir import ensure_private_dir

TOKEN_BYTES = 32  # 256 bits
MIN_GIVEN_LENGTH = 16


class TokenError(Exception):
    """A token given by the environment or a file cannot be used."""


def new_token() -> str:
    return secrets.token_urlsafe(TOKEN_BYTES)


def given_token(settings: Settings) -> str | None:
    """The token the environment gives, checked; None when it gives none."""
    given = settings.front
    if given.token is not None:
        value, origin = given.token, ENV_TOKEN
    elif given.token_file is not None:
        try:
            value = given.token_file.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise TokenError(f"cannot read the token file {given.token_file}: {exc}") from exc
        origin = str(given.token_file)
    else:
        return None
    if len(value) < MIN_GIVEN_LENGTH or not value.isascii() or not value.isprintable() \
            or any(c.isspace() for c in value):
        raise TokenError(f"the token from {origin} must be at least {MIN_GIVEN_LENGTH} "
                         "printable ASCII characters without spaces")
    return value


@contextmanager
def _exclusive(path: Path) -> Iterator[None]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _read(path: Path) -> str | None:
    """The stored token, only from a plain 0600 file of ours (anything else is replaced)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() \
                or stat.S_IMODE(st.st_mode) != 0o600:
            return None
        value = fh.read(4096).decode("ascii", errors="replace").strip()
    return value or None


def _write(path: Path, token: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC,
                 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(token.encode() + b"\n")
    os.replace(tmp, path)


@dataclass
class TokenLease:
    """The token of a running front; `release` when the front stops."""

    token: str
    settings: Settings
    _fd: int
    kept: bool = True  # from the kept file (False: the environment gave it)

    def source(self) -> KeptToken | None:
        """What tells a running front about `token --rotate` (None for a given token)."""
        return KeptToken(self.settings.front_token_path, self.token) if self.kept else None

    def release(self) -> None:
        """The token stays kept for the next front (only --rotate replaces it)."""
        if self._fd < 0:
            return
        os.close(self._fd)
        self._fd = -1


def acquire_token(settings: Settings) -> TokenLease:
    given = given_token(settings)
    ensure_private_dir(settings.runtime_base)
    ensure_private_dir(settings.runtime_dir)
    path = settings.front_token_path
    with _exclusive(settings.front_start_lock_path):
        fd = os.open(settings.front_lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        stored = _read(path)
        token = given or stored or new_token()
        if token != stored:
            _write(path, token)
        fcntl.flock(fd, fcntl.LOCK_SH)  # under the start lock: no one sees the switch
    return TokenLease(token, settings, fd, kept=given is None)


def kept_token(settings: Settings) -> str | None:
    """The project's front token (None when no front has made one yet)."""
    if not settings.front_start_lock_path.exists():
        return None
    with _exclusive(settings.front_start_lock_path):
        return _read(settings.front_token_path)


def rotate_token(settings: Settings) -> str:
    """Replace the kept token; running fronts adopt it at their next request (see
    KeptToken), so every browser holding the old one is logged out."""
    ensure_private_dir(settings.runtime_base)
    ensure_private_dir(settings.runtime_dir)
    token = new_token()
    with _exclusive(settings.front_start_lock_path):
        _write(settings.front_token_path, token)
    return token


class KeptToken:
    """A running front's view of the kept token file: re-read when the file was replaced
    (one stat per check), so `token --rotate` reaches running fronts."""

    def __init__(self, path: Path, token: str) -> None:
        self._path = path
        self.token = token
        self._seen = self._identity()

    def _identity(self) -> tuple[int, int] | None:
        try:
            st = os.stat(self._path)
        except OSError:
            return None
        return st.st_ino, st.st_mtime_ns

    def current(self) -> str:
        identity = self._identity()
        if identity is not None and identity != self._seen:
            self._seen = identity
            self.token = _read(self._path) or self.token
        return self.token
