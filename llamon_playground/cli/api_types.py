"""The API's objects as the client returns them (docs/api.md is the contract).

Answers stay the daemon's own JSON objects (what `--json` prints), typed with TypedDicts so
a caller's type checker knows the fields; fields the daemon adds later pass through.
Streamed events are `Event`s.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NotRequired, TypedDict

import orjson

from llamon_playground.common.contract import TERMINAL_STATUSES, RunStatus
from llamon_playground.common.http_json import decimal_digits
from llamon_playground.common.sse import SseEvent

Part = dict[str, Any]  # a tagged part: {"kind": "text", "text": ...}, data, file...


def text_part(text: str) -> Part:
    return {"kind": "text", "text": text}


class HostStatus(TypedDict):
    state: str  # stopped, starting, ready, backoff, crashloop...
    generation: int | None
    pid: int | None
    url: str | None
    started_at: float | None  # Unix time
    ready_at: float | None
    restarts: int
    crashes: int
    last_exit_code: int | None
    last_stop_step: str | None
    backoff_until: float | None  # Unix time
    start_mode: str | None  # "warm" (forked from the warm parent) or "cold"
    start_reason: str | None  # why that mode (docs/host.md)
    warm_parent: dict[str, Any] | None
    warnings: list[str]
    watch: NotRequired[dict[str, Any]]  # GET /host and the control actions add it


class Health(TypedDict):
    status: str
    version: str
    pid: int
    project: str
    database: str
    host: HostStatus
    active_run_id: str | None
    history_degraded: bool


class Session(TypedDict):
    id: str
    title: str
    context_id: str
    created_at: str
    metadata: dict[str, Any]
    run_count: NotRequired[int]  # in listings


class Run(TypedDict):
    id: str
    session_id: str
    status: str  # a RunStatus value
    reason: str | None
    created_at: str
    started_at: str | None
    ended_at: str | None
    duration_ms: float | None
    context_id: str
    task_id: str | None
    parent_run_id: str | None
    rerun_of: str | None
    resumed_by: str | None
    input: dict[str, Any]  # parts, metadata, changed_files, revision
    output: list[Part] | None
    error: dict[str, Any] | None
    scores: list[dict[str, Any]] | None
    score_summary: dict[str, int]
    generation: int | None
    recommended_run_command: str | None
    label: str | None
    note: str | None
    edited: bool  # a rerun whose body replaced input fields
    edited_fields: list[str]
    code_fingerprint: str | None  # sha256 over the watched files its Host generation ran
    a2a_version: str | None  # the A2A protocol version the run spoke ("1.0", "0.3")
    history_behind: NotRequired[bool]


class Lineage(TypedDict):
    """GET /runs/{id}/lineage: the resume chain (first turn first) and the rerun tree."""

    run_id: str
    resumes: list[dict[str, Any]]
    reruns: dict[str, Any]  # {"run": summary, "reruns": [subtrees]}
    truncated: bool


class RunAccepted(TypedDict):
    """The answer to create, resume, rerun and cancel."""

    run_id: str
    status: str


class LogPage(TypedDict):
    lines: list[dict[str, Any]]
    overflow: bool
    next: int


@dataclass(frozen=True, slots=True)
class Event:
    """One streamed event: `kind` is the SSE event name (`run.status`, `output.delta`, `log`...),
    `data` its JSON object, `id` the last event id in force (a run event's `seq`): pass it
    as `after=` to pick a broken stream up where it stopped."""

    id: int | None
    kind: str
    data: dict[str, Any]

    @classmethod
    def from_sse(cls, sse: SseEvent) -> Event:
        data = orjson.loads(sse.data)
        ident = sse.id
        return cls(int(ident) if ident is not None and decimal_digits(ident) else None, sse.event,
                   data if isinstance(data, dict) else {"value": data})

    @property
    def status(self) -> RunStatus | None:
        """The run's new status, for a `run.status` event."""
        if self.kind != "run.status":
            return None
        try:
            return RunStatus(str(self.data.get("status")))
        except ValueError:
            return None

    @property
    def terminal(self) -> bool:
        """The run's last event: the daemon ends the stream after it."""
        return self.status in TERMINAL_STATUSES
