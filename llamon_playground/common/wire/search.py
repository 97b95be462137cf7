"""What `GET /search` answers: a page of runs that match, each with an excerpt."""

from typing import Annotated, Literal, TypedDict

from llamon_playground.common.wire.history import ScoreSummary
from llamon_playground.common.wire.rules import Doc
from llamon_playground.common.wire.words import RunStatus


class SearchExcerpt(TypedDict):
    """Where the words matched: a few words around them, as plain text (never HTML)."""

    field: Annotated[Literal["input", "output", "label", "note", "title"],
                     Doc("`title` is the run's session's title")]
    text: Annotated[str, Doc("`…` marks text left out before or after")]
    matches: Annotated[list[list[int]], Doc(
        "each match as [start, end) offsets into `text`, in Unicode code points")]


class SearchHit(TypedDict):
    """A run that matched: the run list's fields without its parts, scores and error."""

    id: str
    session_id: str
    session_title: str
    status: RunStatus
    reason: str | None
    created_at: str
    started_at: str | None
    ended_at: str | None
    duration_ms: float | None
    label: str | None
    note: str | None
    generation: int | None
    parent_run_id: str | None
    rerun_of: str | None
    resumed_by: str | None
    code_fingerprint: str | None
    a2a_version: str | None
    score_summary: ScoreSummary
    edited: bool
    edited_fields: list[str]
    input_excerpt: Annotated[str, Doc(
        "the run's input in one line (its first part: text, `{schema}` of a data part, "
        "`file name`; `(+N parts)` when more followed), at most 160 characters: names the "
        "run whatever the words matched")]
    excerpt: Annotated[SearchExcerpt | None, Doc("null when no words were searched, else "
                                                 "where they matched: the reason for the hit")]


class SearchResults(TypedDict):
    """Newest run first; `next_after` is the cursor of the next page (null: no more)."""

    hits: list[SearchHit]
    next_after: str | None
