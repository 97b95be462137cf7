"""The daemon's exceptions. Only the routes in daemon/http/ map them to HTTP answers."""

from __future__ import annotations

from typing import Any


class ApiError(Exception):
    """A client-visible failure: status, stable error code, message and extra detail fields."""

    status = 400
    code = "bad_request"

    def __init__(self, message: str, *, code: str | None = None, status: int | None = None,
                 **extra: Any) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        if status is not None:
            self.status = status
        self.extra = extra

    def detail(self) -> dict[str, Any]:
        """The error's `detail` object: its code, message and extra fields."""
        return {"error": self.code, "message": self.message, **self.extra}


class BadRequest(ApiError):
    """The request body or query is malformed; nothing was written."""


class NotFound(ApiError):
    """The session, run, file or other thing named in the request does not exist."""

    status = 404
    code = "not_found"


class Conflict(ApiError):
    """The request is valid but the current state forbids it (active run, not resumable...)."""

    status = 409
    code = "conflict"


class PayloadTooLarge(ApiError):
    """The request, or a file in it, is over the size the daemon accepts."""

    status = 413
    code = "payload_too_large"


class UnsupportedDatabaseVersion(Conflict):
    """The database was written by a newer version; we never modify it."""

    code = "unsupported_database_version"


class HistoryPathRefused(Conflict):
    """A part of history's path in the project (`.llamon`, `.llamon/playground`, its files
    folder, the database) is a symbolic link: never followed, so a cloned repository cannot
    choose where history is written."""

    code = "history_path_refused"


class StoreError(Exception):
    """A history write failed for a reason that is not the client's fault (disk, locking)."""


class BlockCodecMissing(Exception):
    """History holds event blocks whose codec is not installed (zstandard, from an earlier
    version): the store does not open, and the message names the command that installs it."""


class BootFailed(Exception):
    """Boot recovery could not finish: the daemon stops, saying why, and serves nothing."""


class ProjectError(Exception):
    """The project folder or its pyproject.toml cannot be used."""
