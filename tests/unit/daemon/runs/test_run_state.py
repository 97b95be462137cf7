"""The run state machine as tables: status moves, the reason → status table, the run
object's life, and the outcomes those tables allow."""

from __future__ import annotations

import pytest

from llamon_playground.daemon.runs.ending import RunEnding, RunFailure
from llamon_playground.daemon.runs.state import (
    LIFE_MOVES,
    REASON_STATUS,
    TERMINAL_STATUSES,
    TRANSITIONS,
    IllegalTransition,
    Reason,
    RunLife,
    RunStatus,
    check_life_move,
    check_transition,
    status_for,
)

REASONS = sorted(Reason)


def test_every_reason_has_exactly_one_terminal_status() -> None:
    assert REASONS, "no Reason constants found"
    assert sorted(REASON_STATUS) == REASONS
    for reason, status in REASON_STATUS.items():
        assert status in TERMINAL_STATUSES, reason
        assert status_for(reason) is status


def test_a_hung_host_fails_the_run() -> None:
    # The Host-fault drill and docs/api.md both say `failed`/`host_unresponsive`.
    assert status_for(Reason.HOST_UNRESPONSIVE) is RunStatus.FAILED


@pytest.mark.parametrize(("reason", "status"), [
    (Reason.USER_CANCELLED, RunStatus.CANCELLED),
    (Reason.HOST_CANCELLED, RunStatus.CANCELLED),
    (Reason.RUNTIME_RESTARTED, RunStatus.FAILED),
    (Reason.STUDIO_SHUTDOWN, RunStatus.INTERRUPTED),
    (Reason.DAEMON_RESTARTED, RunStatus.INTERRUPTED),
    (Reason.IMPORTED, RunStatus.INTERRUPTED),
    (Reason.AUTH_REQUIRED, RunStatus.INPUT_REQUIRED),
])
def test_reasons_that_are_not_failures(reason: str, status: RunStatus) -> None:
    assert status_for(reason) is status


def test_an_unknown_reason_has_no_status() -> None:
    with pytest.raises(KeyError):
        status_for("made_up")


def test_status_table_covers_every_status_and_endings_are_final() -> None:
    assert set(TRANSITIONS) == set(RunStatus)
    for status in TERMINAL_STATUSES:
        assert TRANSITIONS[status] == frozenset()


@pytest.mark.parametrize(("current", "target"), [
    (RunStatus.QUEUED, RunStatus.PREPARING),
    (RunStatus.PREPARING, RunStatus.RUNNING),
    (RunStatus.QUEUED, RunStatus.CANCELLED),  # cancelled before its first step
    (RunStatus.PREPARING, RunStatus.FAILED),
    (RunStatus.RUNNING, RunStatus.COMPLETED),
    (RunStatus.RUNNING, RunStatus.INPUT_REQUIRED),
])
def test_legal_status_moves(current: RunStatus, target: RunStatus) -> None:
    check_transition(current, target)


@pytest.mark.parametrize(("current", "target"), [
    (RunStatus.QUEUED, RunStatus.RUNNING),  # no skipping preparing
    (RunStatus.RUNNING, RunStatus.PREPARING),
    (RunStatus.COMPLETED, RunStatus.FAILED),
    (RunStatus.INPUT_REQUIRED, RunStatus.RUNNING),  # a resume is a new run
    (RunStatus.CANCELLED, RunStatus.CANCELLED),
])
def test_illegal_status_moves_raise(current: RunStatus, target: RunStatus) -> None:
    with pytest.raises(IllegalTransition):
        check_transition(current, target)


def test_life_table_covers_every_state() -> None:
    assert set(LIFE_MOVES) == set(RunLife)
    assert LIFE_MOVES[RunLife.ENDED] == frozenset()


@pytest.mark.parametrize(("current", "target"), [
    (RunLife.BEFORE_HOST, RunLife.HOST_CHECKED),
    (RunLife.BEFORE_HOST, RunLife.STOPPING),
    (RunLife.HOST_CHECKED, RunLife.ENDING),
    (RunLife.STOPPING, RunLife.ENDING),
    (RunLife.ENDING, RunLife.ENDED),
])
def test_legal_life_moves(current: RunLife, target: RunLife) -> None:
    check_life_move(current, target)


@pytest.mark.parametrize(("current", "target"), [
    (RunLife.ENDED, RunLife.ENDING),  # ending twice
    (RunLife.ENDING, RunLife.STOPPING),  # stopping a terminal write half-way
    (RunLife.STOPPING, RunLife.HOST_CHECKED),
    (RunLife.HOST_CHECKED, RunLife.BEFORE_HOST),
    (RunLife.BEFORE_HOST, RunLife.ENDED),  # every ending passes through ENDING
])
def test_illegal_life_moves_raise(current: RunLife, target: RunLife) -> None:
    with pytest.raises(IllegalTransition):
        check_life_move(current, target)


@pytest.mark.parametrize(("status", "reason"), [
    (RunStatus.INTERRUPTED, Reason.HOST_UNRESPONSIVE),  # disagrees with the table
    (RunStatus.COMPLETED, Reason.USER_CANCELLED),
    (RunStatus.FAILED, None),  # a failure always says why
    (RunStatus.RUNNING, None),  # not an ending
])
def test_endings_the_tables_forbid(status: RunStatus, reason: str | None) -> None:
    with pytest.raises(ValueError):
        RunEnding(status, reason)


def test_endings_without_reason_and_with_an_unknown_one() -> None:
    assert RunEnding(RunStatus.COMPLETED).reason is None
    assert RunEnding(RunStatus.INPUT_REQUIRED).reason is None
    # Reasons are an open set: one the table lacks does not pin a status.
    assert RunEnding(RunStatus.FAILED, "some_future_reason").status is RunStatus.FAILED


def test_run_failure_refuses_an_unknown_reason_and_takes_the_table_status() -> None:
    with pytest.raises(KeyError):
        RunFailure("not_a_reason", "boom")
    failure = RunFailure(Reason.HOST_EXITED, "gone", code="x", log_tail=["last"])
    assert (failure.status, failure.reason, failure.message, failure.code) == (
        RunStatus.FAILED, Reason.HOST_EXITED, "gone", "x")
    assert failure.detail == {"log_tail": ["last"]}
