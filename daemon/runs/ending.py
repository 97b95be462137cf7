"""What a run's ending records (`RunEnding`), and the exception a run phase raises to end
it (`RunFailure`). Which status, reason and message an ending gets is decided in one place:
`end_rules.decide_end`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from llamon_playground.daemon.runs.output import OutputCollector
from llamon_playground.daemon.runs.state import (
    REASON_STATUS,
    TERMINAL_STATUSES,
    UNREASONED_STATUSES,
    RunStatus,
    status_for,
)


@dataclass(frozen=True)
class RunEnding:
    """What `ActiveRun.end` hands the journal. A `message` makes it an ending with an error
    part, and its complete phase says it (`reconcile.complete_phase`); `detail` (log_tail, file/line/column,
    recommended_run_command) goes into that phase event and the stored error."""

    status: RunStatus
    reason: str | None = None
    message: str | None = None
    code: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)
    output: OutputCollector | None = None

    def __post_init__(self) -> None:
        # The reason table is the only place that decides a status: disagreeing is a bug.
        if self.status not in TERMINAL_STATUSES:
            raise ValueError(f"{self.status} is not an ending")
        if self.reason is None:
            if self.status not in UNREASONED_STATUSES:
                raise ValueError(f"a run ending {self.status} needs a reason")
        elif REASON_STATUS.get(self.reason, self.status) != self.status:
            raise ValueError(f"reason {self.reason} ends a run {status_for(self.reason)}, "
                             f"not {self.status}")


class RunFailure(Exception):
    """Raised by a run phase: ends the run for `reason` (a known one, so a typo fails loudly
    here rather than at the ending); `detail` goes into the failed complete phase event."""

    def __init__(self, reason: str, message: str, *, code: str | None = None,
                 **detail: Any) -> None:
        super().__init__(message)
        self.reason = reason
        self.status = status_for(reason)
        self.message = message
        self.code = code
        self.detail = detail
