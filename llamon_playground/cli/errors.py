"""What the client (`cli/client.py`) raises: never a raw aiohttp or socket exception.

    PlaygroundError
    ├── DaemonNotRunning      nothing answers on the project's socket
    │   └── ConnectionLost    the daemon went away mid-answer or mid-stream
    └── ApiError              the daemon answered 4xx/5xx: status, code, message, detail
        └── ActiveRunConflict 409 `active_run_conflict`: another run is active

Every error answer of the API is `{"detail": {"error": code, "message": ..., **extra}}`
(docs/api.md); `ApiError.detail` keeps the whole of it.
"""

from __future__ import annotations

from typing import Any

ACTIVE_RUN_CONFLICT = "active_run_conflict"
# The command's exit codes (docs/cli.md). Here, in a module that imports nothing, so that the
# long-lived commands (`daemon`, `up`, `front`) have them without loading the client.
EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_NOT_RUNNING, EXIT_CONFLICT = 0, 1, 2, 3, 4


class PlaygroundError(Exception):
    """Anything the client raises."""


class DaemonNotRunning(PlaygroundError):
    """No daemon answers on the project's socket (none runs, or the runtime dir is not ours)."""


class ConnectionLost(DaemonNotRunning):
    """The daemon closed the connection mid-answer or mid-stream (it stopped or restarted).

    A stream can be picked up where it broke: `stream(run_id, after=last_event.id)`.
    """


class ApiError(PlaygroundError):
    """The daemon answered with an error status; `code` is the stable `detail.error`."""

    def __init__(self, status: int, detail: dict[str, Any]) -> None:
        self.status = status
        self.detail = detail
        self.code = str(detail.get("error") or "http_error")
        self.message = str(detail.get("message") or f"HTTP {status}")
        super().__init__(f"{self.message} ({self.code})")


class ActiveRunConflict(ApiError):
    """Another run is active in the project (one at a time); `active_run_id` names it."""

    @property
    def active_run_id(self) -> str | None:
        value = self.detail.get("active_run_id")
        return str(value) if value is not None else None

    @property
    def suite_run_id(self) -> str | None:
        """The suite run holding the project, when one does."""
        value = self.detail.get("suite_run_id")
        return str(value) if value is not None else None


def api_error(status: int, doc: Any) -> ApiError:
    """The error for an answer with status >= 400 and body `doc` (parsed JSON, or None)."""
    detail = doc.get("detail") if isinstance(doc, dict) else None
    if not isinstance(detail, dict):
        detail = {"error": "http_error", "message": f"HTTP {status}"}
    if status == 409 and detail.get("error") == ACTIVE_RUN_CONFLICT:
        return ActiveRunConflict(status, detail)
    return ApiError(status, detail)
