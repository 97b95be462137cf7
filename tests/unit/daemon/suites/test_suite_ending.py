"""The suite run's end decision as a table: each way a suite run stops, the status and
reason it is stored with, and what its unfinished cases are skipped for."""

from __future__ import annotations

import pytest

from llamon_playground.common.wire.suites import SuiteRunStatus
from llamon_playground.daemon.suites.ending import (
    TERMINAL,
    Stop,
    SuiteEnd,
    decide_suite_end,
    skipped_for,
)

TABLE = [
    # stop, cancel asked meanwhile, status, reason
    (Stop.FINISHED, False, SuiteRunStatus.COMPLETED, None),
    (Stop.FINISHED, True, SuiteRunStatus.CANCELLED, "user_cancelled"),
    (Stop.CANCELLED, True, SuiteRunStatus.CANCELLED, "user_cancelled"),
    (Stop.REVISION_CHANGED, False, SuiteRunStatus.FAILED, "runtime_restarted"),
    (Stop.REVISION_CHANGED, True, SuiteRunStatus.FAILED, "runtime_restarted"),
    (Stop.SHUTDOWN, False, SuiteRunStatus.INTERRUPTED, "studio_shutdown"),
    (Stop.SHUTDOWN, True, SuiteRunStatus.INTERRUPTED, "studio_shutdown"),
    (Stop.CRASHED, False, SuiteRunStatus.FAILED, "internal_error"),
    (Stop.ORPHANED, False, SuiteRunStatus.INTERRUPTED, "daemon_restarted"),
]


@pytest.mark.parametrize(("stop", "cancel_asked", "status", "reason"), TABLE)
def test_each_stop_ends_in_its_status_and_reason(stop: Stop, cancel_asked: bool,
                                                 status: SuiteRunStatus,
                                                 reason: str | None) -> None:
    end = decide_suite_end(stop, cancel_asked=cancel_asked)
    assert (end.status, end.reason) == (status, reason)
    assert end.status in TERMINAL


def test_every_stop_has_a_row() -> None:
    assert {row[0] for row in TABLE} == set(Stop)


def test_a_crash_says_what_raised_and_nothing_else_carries_a_message() -> None:
    assert decide_suite_end(Stop.CRASHED, error=RuntimeError("boom")).message == "boom"
    for stop in Stop:
        if stop is not Stop.CRASHED:
            assert decide_suite_end(stop, error=RuntimeError("x")).message is None


def test_unfinished_cases_are_skipped_for_the_reason_or_the_status() -> None:
    assert skipped_for(decide_suite_end(Stop.ORPHANED)) == "daemon_restarted"
    assert skipped_for(SuiteEnd(SuiteRunStatus.COMPLETED)) == "completed"


def test_running_is_the_only_status_that_is_not_an_ending() -> None:
    assert set(SuiteRunStatus) - TERMINAL == {SuiteRunStatus.RUNNING}
