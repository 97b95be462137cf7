"""How a suite run ends, decided in one place: from what stopped it to the status, reason and
message it is stored with.

A pure function over one table, as `daemon/runs/end_rules.py` is for a run: the runner asks
it when its loop is over (or its task is cancelled, or it crashed), boot recovery asks it for
a suite run a dead daemon left `running`, and nothing else picks a suite run's ending.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from llamon_playground.common.wire.suites import SuiteRunStatus
from llamon_playground.daemon.runs.state import Reason

TERMINAL = frozenset(SuiteRunStatus) - {SuiteRunStatus.RUNNING}


class Stop(Enum):
    """What ended the suite run's loop."""

    FINISHED = "finished"  # every case ran
    CANCELLED = "cancelled"  # DELETE /suite-runs/{id}
    REVISION_CHANGED = "revision_changed"  # the Host restarted on other code mid-run
    SHUTDOWN = "shutdown"  # the daemon stopped cleanly; the task was cancelled
    CRASHED = "crashed"  # the runner raised (a bug)
    ORPHANED = "orphaned"  # boot recovery found it running with no daemon behind it


@dataclass(frozen=True)
class SuiteEnd:
    """The status, reason and message a suite run ends with."""

    status: SuiteRunStatus
    reason: str | None = None
    message: str | None = None


# Keyed by what stopped it: the status and reason. The reason is also what every case not
# done by then is `skipped_for`.
END_RULES: dict[Stop, tuple[SuiteRunStatus, str | None]] = {
    Stop.FINISHED: (SuiteRunStatus.COMPLETED, None),
    Stop.CANCELLED: (SuiteRunStatus.CANCELLED, Reason.USER_CANCELLED),
    Stop.REVISION_CHANGED: (SuiteRunStatus.FAILED, Reason.RUNTIME_RESTARTED),
    Stop.SHUTDOWN: (SuiteRunStatus.INTERRUPTED, Reason.STUDIO_SHUTDOWN),
    Stop.CRASHED: (SuiteRunStatus.FAILED, Reason.INTERNAL_ERROR),
    Stop.ORPHANED: (SuiteRunStatus.INTERRUPTED, Reason.DAEMON_RESTARTED),
}


def decide_suite_end(stop: Stop, *, cancel_asked: bool = False,
                     error: BaseException | None = None) -> SuiteEnd:
    """The ending of a suite run.

    `stop`: what ended its loop. `cancel_asked`: a cancel came in while it ran; a loop that
    ran out of cases after that still ends `cancelled` (the case cut short was skipped, so
    the report is not whole). `error`: what the runner raised, for `Stop.CRASHED`.
    """
    if stop is Stop.FINISHED and cancel_asked:
        stop = Stop.CANCELLED
    status, reason = END_RULES[stop]
    message = str(error) if stop is Stop.CRASHED and error is not None else None
    return SuiteEnd(status, reason, message or None)


def skipped_for(end: SuiteEnd) -> str:
    """What the cases a suite run never finished are `skipped_for`."""
    return end.reason or end.status.value
