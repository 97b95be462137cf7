"""What the API answers about history: sessions, runs, their parts, lineage, events, errors."""

from typing import Annotated, Any, NotRequired, TypedDict

from llamon_playground.common.wire.rules import Doc, JsonObject
from llamon_playground.common.wire.words import RunStatus


class ErrorDetail(TypedDict):
    """What went wrong: a stable code for programs and a sentence for people."""

    error: Annotated[str, Doc("a stable code, e.g. `invalid_request`, `run_not_found`")]
    message: str


class Error(TypedDict):
    """Every refusal: `{"detail": {"error", "message", ...}}` (some add fields)."""

    detail: ErrorDetail


class Part(TypedDict):
    """A stored part: text, data or file (`kind`); in a list answer, perhaps an excerpt."""

    kind: str
    text: NotRequired[str]
    data: NotRequired[Any]
    sha256: NotRequired[str | None]
    size: NotRequired[Annotated[int | None, Doc(
        "a file's bytes; for a cut part, its whole size as stored, in bytes (a text's "
        "UTF-8, else the part's JSON)")]]
    truncated: NotRequired[Annotated[bool, Doc(
        "an excerpt: a text's first characters (2,000 in a list answer, 16,384 in "
        "`GET /runs/{id}`), else the `kind` only; `content_url` streams the whole")]]
    content_url: NotRequired[Annotated[str, Doc(
        "on a cut part: `GET` it for the whole part (Content-Length, Range requests)")]]
    name: NotRequired[str | None]
    mime: NotRequired[str | None]
    source: NotRequired[str | None]
    uri: NotRequired[str]
    availability: NotRequired[str]
    replay: NotRequired[str]
    status: NotRequired[str]
    reason: NotRequired[str | None]
    message: NotRequired[str]
    code: NotRequired[str | None]


class Session(TypedDict):
    """One conversation: it owns one A2A contextId."""

    id: str
    title: str
    context_id: str
    created_at: str
    metadata: JsonObject
    run_count: NotRequired[Annotated[int, Doc("in listings")]]
    metadata_truncated: NotRequired[Annotated[bool, Doc(
        "in listings: the metadata is over 4,096 bytes and shown as `{}`")]]
    last_activity_at: NotRequired[Annotated[str, Doc(
        "in listings and GET /sessions/{id}: the newest run's end (its start while it "
        "runs), else the session's creation")]]


class SessionList(TypedDict):
    """A page of sessions, newest first; `next_after` is the cursor of the next page."""

    sessions: list[Session]
    next_after: str | None


class RunInput(TypedDict):
    """What the run sent: its request body as stored (metadata redacted)."""

    parts: list[Part]
    metadata: NotRequired[JsonObject]
    metadata_truncated: NotRequired[Annotated[bool, Doc(
        "in listings: the metadata is over 4,096 bytes and shown as `{}`")]]
    changed_files: NotRequired[list[str]]
    revision: NotRequired[str | None]


class ScoreSummary(TypedDict):
    """How many evaluators scored the run, and how many of them said it failed."""

    evaluators: int
    failed: int


class Run(TypedDict):
    """A run's detail: its row, with the parts, scores and edits decoded."""

    id: str
    session_id: str
    status: RunStatus
    reason: Annotated[str | None, Doc("why it ended (an open set: RunReason)")]
    created_at: str
    started_at: str | None
    ended_at: str | None
    duration_ms: float | None
    context_id: str
    task_id: str | None
    parent_run_id: str | None
    rerun_of: str | None
    resumed_by: str | None
    input: RunInput
    output: list[Part]
    error: JsonObject | None
    scores: list[JsonObject]
    score_summary: ScoreSummary
    generation: int | None
    recommended_run_command: str | None
    label: str | None
    note: str | None
    edited: Annotated[bool, Doc("a rerun whose body replaced input fields")]
    edited_fields: list[str]
    code_fingerprint: Annotated[
        str | None, Doc("sha256 over the watched files its Host generation ran")]
    a2a_version: Annotated[str | None, Doc("the A2A protocol version it spoke")]
    suite_run_id: NotRequired[Annotated[str | None, Doc("the suite run it was a case of")]]
    case_id: NotRequired[Annotated[str | None, Doc("the suite case it ran")]]
    history_behind: NotRequired[Annotated[
        bool, Doc("history lags the daemon (degraded writes): the status is the daemon's")]]


class RunSummary(TypedDict):
    """A run in a lineage: its row without parts."""

    id: str
    session_id: str
    status: RunStatus
    reason: str | None
    created_at: str
    label: str | None
    generation: int | None
    code_fingerprint: str | None
    parent_run_id: str | None
    rerun_of: str | None
    resumed_by: str | None
    edited: bool
    edited_fields: list[str]


class RerunTree(TypedDict):
    """A run and the reruns made from it, each with its own reruns."""

    run: RunSummary
    reruns: list["RerunTree"]


class Lineage(TypedDict):
    """`GET /runs/{id}/lineage`: the resume chain (first turn first) and the rerun tree."""

    run_id: str
    resumes: list[RunSummary]
    reruns: RerunTree
    truncated: bool


class RunList(TypedDict):
    """A page of a session's runs; `next_after` is the cursor of the next page."""

    runs: list[Run]
    next_after: str | None


class RunAccepted(TypedDict):
    """The answer to create, resume, rerun and cancel."""

    run_id: str
    status: RunStatus


class SessionDeleted(TypedDict):
    """`DELETE /sessions/{id}`: the session gone, and how many files went with it."""

    deleted: str
    blobs_removed: int


class DeletedCounts(TypedDict):
    """How many rows of each kind a deletion removed."""

    sessions: NotRequired[int]
    runs: NotRequired[int]
    events: NotRequired[int]
    suites: NotRequired[int]


class HistoryDeleted(TypedDict):
    """`DELETE /history`: what was removed, rows and files."""

    deleted: DeletedCounts
    blobs_removed: int


class RunEvent(TypedDict):
    """One run event's `data`: these keys and the kind's own fields (docs/api.md, Events)."""

    seq: int
    run_id: str
    kind: Annotated[str, Doc("the SSE event name; an open set (RunEventKind)")]
