"""The wire's closed and open word lists: statuses, reasons, Host states, event kinds, limits.

Run statuses are a closed set (`common/contract.py` spells them). Reasons and event kinds are
open sets: these are the ones the daemon sends today, and clients must accept others.
The limits are the ones the daemon enforces on request bodies (a unit test holds the
daemon's parsers to them).
"""

from __future__ import annotations

from enum import StrEnum

from llamon_playground.common.contract import (
    ACTIVE_STATUSES,
    API_PREFIX,
    SUCCESS_STATUSES,
    TERMINAL_STATUSES,
    RunStatus,
)

__all__ = [
    "ACTIVE_STATUSES",
    "API_PREFIX",
    "BUNDLE_FORMAT",
    "MAX_CHANGED_FILES",
    "MAX_INLINE_FILE_BYTES",
    "MAX_LABEL",
    "MAX_NOTE",
    "MAX_PARTS",
    "MAX_REVISION",
    "MAX_TITLE",
    "SUCCESS_STATUSES",
    "TERMINAL_STATUSES",
    "HostStateName",
    "PhaseState",
    "ProjectEventKind",
    "RunEventKind",
    "RunReason",
    "RunStatus",
]


class RunReason(StrEnum):
    """Why a run ended as it did (docs/api.md, Reasons). An open set."""

    PROJECT_VALIDATION = "project_validation"
    RUNTIME_UNAVAILABLE = "runtime_unavailable"
    HOST_EXITED = "host_exited"
    HOST_ERROR = "host_error"
    HOST_REJECTED = "host_rejected"
    HOST_UNRESPONSIVE = "host_unresponsive"
    HOST_OUTPUT_TOO_LARGE = "host_output_too_large"
    RUNTIME_RESTARTED = "runtime_restarted"
    HOST_CANCELLED = "host_cancelled"
    STREAM_BROKEN = "stream_broken"
    USER_CANCELLED = "user_cancelled"
    STUDIO_SHUTDOWN = "studio_shutdown"
    DAEMON_RESTARTED = "daemon_restarted"
    AUTH_REQUIRED = "auth_required"
    IMPORTED = "imported"
    INTERNAL_ERROR = "internal_error"


class PhaseState(StrEnum):
    """A `run.phase` event's `state`. A phase that started closes once, with one of the
    others: `completed`/`skipped`, or the run's own end when the run ended otherwise
    (`failed`, `cancelled`, `interrupted`): never `completed` after such an end."""

    STARTED = "started"
    COMPLETED = "completed"
    SKIPPED = "skipped"
    FAILED = "failed"
    CANCELLED = "cancelled"
    INTERRUPTED = "interrupted"


class HostStateName(StrEnum):
    """The Host's lifecycle states, as `GET /host` spells them (a closed set)."""

    STOPPED = "stopped"
    STARTING = "starting"
    READY = "ready"
    STOPPING = "stopping"
    BACKOFF = "backoff"  # crashed or exited; an automatic restart is pending
    CRASHLOOP = "crashloop"  # crashed too often: no automatic restart until an edit or a start


class RunEventKind(StrEnum):
    """A run's event kinds on `GET /runs/{id}/events`. An open set."""

    STATUS = "run.status"
    PHASE = "run.phase"
    OUTPUT_DELTA = "output.delta"
    OUTPUT = "run.output"
    TRACE = "trace"
    DIAGNOSTIC = "diagnostic"


class ProjectEventKind(StrEnum):
    """The event kinds on the project-wide `GET /events` (and `log` on the Host's logs)."""

    HOST_STATE = "host.state"
    RUN_ACTIVE = "run.active"
    RUN_STATUS = "run.status"
    RUN_UPDATED = "run.updated"
    SESSION_UPDATED = "session.updated"
    SESSION_CREATED = "session.created"
    SESSION_DELETED = "session.deleted"
    LOG = "log"


BUNDLE_FORMAT = "llamon.playground.bundle/1"
MAX_TITLE = 500
MAX_LABEL = 200
MAX_NOTE = 10_000
MAX_REVISION = 256
MAX_PARTS = 256
MAX_INLINE_FILE_BYTES = 10 * 1024 * 1024  # one inline file's bytes (base64 carries 4/3)
MAX_CHANGED_FILES = 1000
