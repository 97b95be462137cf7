"""Suites: named, ordered cases kept in history, their runs and the report (counts only)."""

from enum import StrEnum
from typing import Annotated, Any, Literal, NotRequired, TypedDict

from llamon_playground.common.wire.rules import NONEMPTY, Doc, Json, JsonObject, closed

MAX_SUITE_NAME = 200
MAX_SUITE_CASES = 1000
MAX_SUITE_REPEAT = 100
SuiteName = Annotated[str, Json(minLength=1, maxLength=MAX_SUITE_NAME, pattern="\\S")]


class SuiteRunStatus(StrEnum):
    """A suite run's status: `running` until one pure decision ends it
    (`daemon/suites/ending.py`)."""

    RUNNING = "running"
    COMPLETED = "completed"
    CANCELLED = "cancelled"
    FAILED = "failed"
    INTERRUPTED = "interrupted"


CaseState = Literal["pending", "running", "done", "skipped"]
CaseMark = Literal["same", "changed", "flaky"]


@closed
class RunCaseSpec(TypedDict):
    """A stored run: `run` replays its input, `chain` it and its answers (default in one)."""

    run_id: Annotated[str, NONEMPTY]
    kind: NotRequired[Literal["run", "chain"]]


@closed
class SessionCaseSpec(TypedDict):
    """A whole session as a case: its turns in order, in one new context."""

    session_id: Annotated[str, NONEMPTY]


SuiteCaseSpec = RunCaseSpec | SessionCaseSpec


@closed
class SuiteCreate(TypedDict):
    """`POST /suites`: inputs and baselines are copied now (a deleted source still runs)."""

    name: SuiteName
    cases: Annotated[list[SuiteCaseSpec], Json(minItems=1, maxItems=MAX_SUITE_CASES)]
    run_on_save: NotRequired[bool]


@closed
class SuitePatch(TypedDict):
    """`PATCH /suites/{id}`: rename, run on save, or make a suite run's results the baselines."""

    name: NotRequired[SuiteName]
    run_on_save: NotRequired[bool]
    baseline_suite_run_id: NotRequired[Annotated[str, NONEMPTY]]


@closed
class SuiteStart(TypedDict):
    """`POST /suites/{id}/runs`: how many times each case runs (default: the suite's)."""

    repeat: NotRequired[Annotated[int, Json(minimum=1, maximum=MAX_SUITE_REPEAT)]]


@closed
class SuiteSave(TypedDict):
    """`POST /suites/{id}/file`: where in the project (default playground/suites/NAME.json)."""

    path: NotRequired[Annotated[str, NONEMPTY]]


class SuiteFileSaved(TypedDict):
    """The suite's file, written."""

    suite_id: str
    path: Annotated[str, Doc("relative to the project")]
    bytes: int
    files: Annotated[int, Doc("input blobs beside it, in playground/suites/files/")]


class SuiteFileProblem(TypedDict):
    """A suite file that could not be read (nothing else is affected)."""

    error: str
    path: str
    line: int
    message: str
    where: Annotated[str, Doc("`path:line`")]


class CaseBaseline(TypedDict):
    """What a case is compared with: a stored run's result, or a suite run's."""

    run_id: str | None
    run_ids: list[str]
    status: str | None
    code_fingerprint: str | None
    deleted: Annotated[bool, Doc("its run(s) were deleted from history (the copy stays)")]
    suite_run_id: NotRequired[str | None]
    source: NotRequired[Annotated[str | None, Doc("`history` (a stored run) or `suite_run`")]]


class SuiteCase(TypedDict):
    """A suite case: its copied turns (counted here) and the baseline it is compared with."""

    id: str
    position: int
    kind: Literal["run", "chain", "session"]
    source_run_id: str | None
    source_session_id: str | None
    turns: int
    input_excerpt: Annotated[str, Doc("its first turn's input in one line (as a search "
                                      "hit's `input_excerpt`): names the case")]
    baseline: CaseBaseline


class Suite(TypedDict):
    """A suite: named, ordered cases kept in history."""

    id: str
    name: str
    created_at: str
    run_on_save: bool
    last_revision: Annotated[str | None, Doc("the revision run on save ran last")]
    case_count: int
    last_suite_run_id: str | None
    repeat: Annotated[int, Doc("how many times a suite run runs each case by default")]
    file_path: Annotated[str | None, Doc("the file it is kept in, relative to the project "
                                         "(null: in history only)")]
    file_digest: Annotated[str | None, Doc("sha256 of the file as last read or written")]
    cases: NotRequired[list[SuiteCase]]


class SuiteList(TypedDict):
    """`GET /suites`: every suite."""

    suites: list[Suite]
    runs_on_save: Annotated[int, Doc("suite runs run on save started by this daemon")]
    file_errors: Annotated[list[SuiteFileProblem], Doc("suite files that could not be read")]


class SuiteDeleted(TypedDict):
    """`DELETE /suites/{id}`: what went with it."""

    deleted: str
    blobs_removed: int
    file_removed: Annotated[bool, Doc("its suite file was deleted too")]


class SuiteRunAccepted(TypedDict):
    """The answer to start and cancel."""

    suite_run_id: str
    status: SuiteRunStatus


class ScoreMove(TypedDict):
    """One evaluator score before and after, in a case's row."""

    evaluator: Any
    scope: Any
    node: Any
    before: float | None
    after: float | None
    delta: float | None
    pass_before: Any
    pass_after: Any


class Spread(TypedDict):
    """Min, median and max over a case's repetitions."""

    min: float
    median: float
    max: float


class ScoreSpread(TypedDict):
    """One evaluator's score over a case's repetitions."""

    evaluator: str
    min: NotRequired[float]
    median: NotRequired[float]
    max: NotRequired[float]


class CaseRow(TypedDict):
    """A case's line in the report; the move fields only once it is done."""

    case_id: str
    position: int
    kind: str | None
    input_excerpt: Annotated[str, Doc("its first turn's input in one line (as a search "
                                      "hit's `input_excerpt`): names the case")]
    turns: Annotated[int, Doc("how many turns the case replays")]
    started_at: Annotated[str | None, Doc("when its first run of this suite run was made "
                                          "(null before it started)")]
    state: CaseState
    run_ids: list[str]
    skipped_for: str | None
    baseline: CaseBaseline
    status_before: NotRequired[str | None]
    status_after: NotRequired[str | None]
    reason_after: NotRequired[str | None]
    status_moved: NotRequired[bool]
    changed: NotRequired[bool]
    duration_delta_ms: NotRequired[float | None]
    text_changed: NotRequired[bool]
    text_diff_lines: NotRequired[int]
    data_changes: NotRequired[Annotated[list[str], Doc("JSON pointers")]]
    files_changed: NotRequired[int]
    scores: NotRequired[list[ScoreMove]]
    repeat: NotRequired[Annotated[int, Doc("how many times it ran")]]
    mark: NotRequired[Annotated[CaseMark, Doc(
        "`flaky`: its repetitions disagree; `changed`: they agree with each other and not "
        "with the baseline; `same`")]]
    baseline_status_share: NotRequired[Annotated[float | None, Doc(
        "the share of its repetitions that ended with the baseline's status")]]
    statuses: NotRequired[list[str]]
    score_spread: NotRequired[list[ScoreSpread]]
    duration_spread: NotRequired[Spread | None]


class StatusMove(TypedDict):
    """How many cases moved from one status to another."""

    before: str | None
    after: str | None
    count: int


class EvaluatorMove(TypedDict):
    """One evaluator across the suite run: means and pass/fail flips."""

    evaluator: str
    mean_before: float | None
    mean_after: float | None
    pass_to_fail: int
    fail_to_pass: int


class SuiteSummary(TypedDict):
    """A report's counts (no verdict)."""

    cases: int
    done: int
    skipped: int
    pending: int
    changed: Annotated[int, Doc("cases marked `changed`")]
    flaky: Annotated[int, Doc("cases marked `flaky` (their repetitions disagreed)")]
    status_moved_cases: int
    statuses_moved: list[StatusMove]
    evaluators: list[EvaluatorMove]


class SuiteRunRow(TypedDict):
    """A suite run as listed."""

    id: str
    suite_id: str
    session_id: str | None
    status: SuiteRunStatus
    reason: str | None
    trigger: Literal["manual", "save"]
    created_at: str
    ended_at: str | None
    code_fingerprint: Annotated[str | None, Doc("the revision every case ran against")]
    repeat: Annotated[int, Doc("how many times each case ran")]


class SuiteRun(SuiteRunRow):
    """`GET /suite-runs/{id}`: the report, as far as the run got. No verdict."""

    suite_name: str | None
    cases: list[CaseRow]
    summary: SuiteSummary
    baseline_fingerprints: list[str]
    automatic_verdict: None


class SuiteRunList(TypedDict):
    """`GET /suites/{id}/runs`: a suite's runs, newest first."""

    suite_runs: list[SuiteRunRow]


class SuiteCaseCompare(TypedDict):
    """`GET /suite-runs/{id}/cases/{case_id}`: the case's row and its Compare in full."""

    case_id: str
    row: JsonObject
    compare: JsonObject
