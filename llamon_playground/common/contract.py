"""The API's fixed words, written once: the path prefix and the eight run statuses.

The whole contract is in docs/api.md; this module holds only what code on both sides of
the socket (daemon, front, CLI, client, tests) must spell the same way.
"""

from __future__ import annotations

from enum import StrEnum

API_PREFIX = "/api/playground/v1"


class RunStatus(StrEnum):
    """Exactly these eight; the cause of an ending goes in the run's `reason`."""

    QUEUED = "queued"
    PREPARING = "preparing"
    RUNNING = "running"
    INPUT_REQUIRED = "input_required"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"
    INTERRUPTED = "interrupted"


ACTIVE_STATUSES = frozenset({RunStatus.QUEUED, RunStatus.PREPARING, RunStatus.RUNNING})
# input_required is terminal for the run: the conversation continues in a child run.
TERMINAL_STATUSES = frozenset(RunStatus) - ACTIVE_STATUSES
# Terminal statuses that count as success for a command's exit code.
SUCCESS_STATUSES = frozenset({RunStatus.COMPLETED, RunStatus.INPUT_REQUIRED})
