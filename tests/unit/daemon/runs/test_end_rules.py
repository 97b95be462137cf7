"""The one function that decides a run's ending: every row of its tables."""

from __future__ import annotations

import asyncio

import pytest

from llamon_playground.daemon.runs.end_rules import (
    STOP_RULES,
    TASK_STATE_RULES,
    EndDecision,
    cancel_ends_task,
    decide_end,
    decide_orphan_end,
)
from llamon_playground.daemon.runs.ending import RunFailure
from llamon_playground.daemon.runs.state import Reason, RunStatus

CANCEL = asyncio.CancelledError()
FAILURE = RunFailure(Reason.HOST_EXITED, "the Host exited during the run (code 1)")
BUG = KeyError("oops")

FAILED, CANCELLED, INTERRUPTED = RunStatus.FAILED, RunStatus.CANCELLED, RunStatus.INTERRUPTED
COMPLETED, PAUSED = RunStatus.COMPLETED, RunStatus.INPUT_REQUIRED
STOPPED_WORDS = ("the daemon was stopped (SIGTERM or SIGINT, `llamon-playground stop`) during "
                 "the run")


# -- a stop(reason) came, and the task saw its cancellation ----------------------------------

@pytest.mark.parametrize(("stopped_for", "expected"), [
    (Reason.USER_CANCELLED, EndDecision(CANCELLED, Reason.USER_CANCELLED)),
    (Reason.RUNTIME_RESTARTED, EndDecision(FAILED, Reason.RUNTIME_RESTARTED,
        "a watched file changed during the run; the Host restarted")),
    (Reason.HOST_UNRESPONSIVE, EndDecision(FAILED, Reason.HOST_UNRESPONSIVE,
        "the Host sent nothing for 2.5 s and did not answer its agent card; it is being "
        "restarted")),
    (Reason.STUDIO_SHUTDOWN, EndDecision(INTERRUPTED, Reason.STUDIO_SHUTDOWN, STOPPED_WORDS)),
    # A cancel nobody asked for: shutdown.
    (None, EndDecision(INTERRUPTED, Reason.STUDIO_SHUTDOWN, STOPPED_WORDS)),
])
def test_a_cancelled_task_ends_for_its_stop(stopped_for: str | None,
                                           expected: EndDecision) -> None:
    # The Host's task state is not read: a cancelled run did not finish its stream.
    assert decide_end(stopped_for, "completed", CANCEL, stall_timeout=2.5) == expected


def test_every_stop_rule_is_tested_above() -> None:
    assert set(STOP_RULES) == {Reason.USER_CANCELLED, Reason.RUNTIME_RESTARTED,
                               Reason.HOST_UNRESPONSIVE, Reason.STUDIO_SHUTDOWN}


def test_an_unresponsive_host_without_a_known_timeout_still_says_why() -> None:
    decision = decide_end(Reason.HOST_UNRESPONSIVE, None, CANCEL)
    assert decision.message is not None and "sent nothing for too long" in decision.message


@pytest.mark.parametrize(("stopped_for", "quietly"), [
    (Reason.USER_CANCELLED, True),
    (Reason.RUNTIME_RESTARTED, True),
    (Reason.HOST_UNRESPONSIVE, True),
    (Reason.STUDIO_SHUTDOWN, False),  # its canceller (the shutdown) gets its cancel back
    (None, False),
])
def test_which_stops_end_the_task_quietly(stopped_for: str | None, quietly: bool) -> None:
    assert cancel_ends_task(stopped_for) is quietly


STOPPED_STATUS = {Reason.USER_CANCELLED: CANCELLED, Reason.RUNTIME_RESTARTED: FAILED,
                  Reason.HOST_UNRESPONSIVE: FAILED, Reason.STUDIO_SHUTDOWN: INTERRUPTED}


# -- a stop came, but the task ended another way first: the stop decides, without words ------

@pytest.mark.parametrize("error", [None, FAILURE, BUG])
@pytest.mark.parametrize("stopped_for", [Reason.USER_CANCELLED, Reason.RUNTIME_RESTARTED,
                                         Reason.HOST_UNRESPONSIVE, Reason.STUDIO_SHUTDOWN])
def test_a_stop_overrides_whatever_the_task_said(stopped_for: str,
                                                 error: BaseException | None) -> None:
    decision = decide_end(stopped_for, "failed", error, host_said="no")
    # An interrupted run still says what interrupted it: the stop's words, never the task's.
    words = STOPPED_WORDS if stopped_for == Reason.STUDIO_SHUTDOWN else None
    assert decision == EndDecision(STOPPED_STATUS[stopped_for], stopped_for, words)


def test_a_run_found_active_at_start_says_the_daemon_was_killed_or_crashed() -> None:
    decision = decide_orphan_end(Reason.DAEMON_RESTARTED)
    assert (decision.status, decision.reason) == (INTERRUPTED, Reason.DAEMON_RESTARTED)
    assert decision.message is not None and "killed or crashed" in decision.message
    assert decision.message != STOPPED_WORDS



# -- no stop: the exception decides ---------------------------------------------------------

def test_a_run_failure_ends_for_its_own_reason_and_words() -> None:
    assert decide_end(None, "completed", FAILURE) == EndDecision(FAILED, Reason.HOST_EXITED, "the Host exited during the run (code 1)")


def test_host_output_over_its_limit_fails_the_run_with_the_limits_words() -> None:
    # The stream's last task state (here still "working") does not decide: the failure does.
    too_large = RunFailure(Reason.HOST_OUTPUT_TOO_LARGE, "the Host sent a line of more than "
                           "1048576 bytes (the limit; LLAMON_PLAYGROUND_MAX_HOST_LINE_BYTES "
                           "raises it)")
    assert decide_end(None, "working", too_large) == EndDecision(
        FAILED, Reason.HOST_OUTPUT_TOO_LARGE, too_large.message)
    # A stop that came first still wins over it, as over any failure.
    assert decide_end(Reason.USER_CANCELLED, "working", too_large) == EndDecision(
        CANCELLED, Reason.USER_CANCELLED)


def test_any_other_exception_is_an_internal_error() -> None:
    assert decide_end(None, "completed", BUG) == EndDecision(FAILED, Reason.INTERNAL_ERROR, "internal error: 'oops'")


# -- no stop, no exception: the Host's last task state decides ------------------------------

@pytest.mark.parametrize(("task_state", "said", "expected"), [
    ("completed", "", EndDecision(COMPLETED)),
    (None, "", EndDecision(COMPLETED)),  # a stream that ended without naming a state
    ("input_required", "", EndDecision(PAUSED)),
    ("auth_required", "", EndDecision(PAUSED, Reason.AUTH_REQUIRED)),
    ("canceled", "", EndDecision(CANCELLED, Reason.HOST_CANCELLED)),
    ("failed", "", EndDecision(FAILED, Reason.HOST_ERROR, "the Host ended the task failed")),
    ("failed", " quota exceeded ", EndDecision(FAILED, Reason.HOST_ERROR, "the Host ended the task failed: quota exceeded")),
    ("rejected", "", EndDecision(FAILED, Reason.HOST_REJECTED, "the Host ended the task rejected")),
    ("rejected", "not allowed", EndDecision(FAILED, Reason.HOST_REJECTED, "the Host ended the task rejected: not allowed")),
    ("working", "", EndDecision(FAILED, Reason.STREAM_BROKEN,
                                "the stream closed in state 'working'")),
    ("unknown", "", EndDecision(FAILED, Reason.STREAM_BROKEN,
                                "the stream closed in state 'unknown'")),
])
def test_the_hosts_last_task_state_decides(task_state: str | None, said: str,
                                           expected: EndDecision) -> None:
    assert decide_end(None, task_state, None, host_said=said) == expected


def test_every_task_state_rule_is_tested_above() -> None:
    assert set(TASK_STATE_RULES) == {"completed", "input_required", "auth_required",
                                     "canceled", "failed", "rejected"}
