"""The Host, its logs and the daemon's health, as the typed client returns them. GENERATED
by `scripts/gen_wire` from the wire declaration in `llamon_playground/common/wire/`: edit
that, then run `scripts/gen_wire`; never edit this file (a unit test fails when it is
stale).

They stay plain JSON objects, typed with TypedDicts so a caller's type checker knows
the fields; fields the daemon adds later pass through. Enum-valued fields are `str`
(the comment names the enum).
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

__all__ = [
    "Health", "HistorySize", "HostError", "HostErrorDetail", "HostLastError", "HostLogs",
    "HostStatus", "HostWarning", "LogLine", "ReapedProcess", "RetentionPolicy", "TracingHealth",
    "WarmParent", "WatchCounters",
]


class WarmParent(TypedDict):
    """The forked warm parent the Host's generations start from."""

    pid: int
    python: NotRequired[str]
    preloaded: NotRequired[int]
    failed: NotRequired[int]


class HostWarning(TypedDict):
    """A standing warning: `postgresql_backend`, `host_exposed`, `host_module_missing`..."""

    code: str
    message: str
    fix: NotRequired[str]
    module: NotRequired[str]  # host_module_missing: the module the Host lacks


class WatchCounters(TypedDict):
    """The file watcher's counters: change batches seen and restarts they caused."""

    batches: NotRequired[int]
    restarts: NotRequired[int]


class ReapedProcess(TypedDict):
    """A process of an old Host tree killed at start or stop."""

    pid: int
    cmdline: NotRequired[list[str]]
    when: str
    at: NotRequired[float]  # Unix time


class HostLastError(TypedDict):
    """Why the Host's latest generation died, read from its output (docs/host.md)."""

    exception: str  # the traceback's last line, e.g. `RuntimeError: boom`
    # the traceback without the Playground's own preloader and runpy frames, the exception last
    traceback: list[str]
    frames_left_out: int  # how many of the Playground's own frames were left out
    generation: int


class HostStatus(TypedDict):
    """The Host's state machine and its current generation."""

    state: str  # a HostStateName value
    generation: int | None
    pid: int | None
    url: str | None
    # the project's A2A address, kept across generations and daemon restarts (None before the first
    # start)
    a2a_url: str | None
    started_at: float | None  # Unix time
    ready_at: float | None  # Unix time
    restarts: int
    crashes: int
    last_exit_code: int | None  # negative: the signal that ended it
    last_stop_step: str | None
    backoff_until: float | None  # Unix time
    start_mode: Literal["warm", "cold"] | None  # forked from the warm parent, or a new process
    start_reason: str | None  # why that mode (docs/host.md)
    warm_parent: WarmParent | None
    warnings: list[HostWarning]
    # while backing off or in a crashloop: the last traceback the Host wrote (None when it wrote
    # none, or is not failing)
    last_error: HostLastError | None
    watch: NotRequired[WatchCounters]  # GET /host and the control actions
    # GET /host and the control actions: the side of the platform seam the daemon runs
    # (docs/operations.md)
    platform: NotRequired[Literal["linux", "portable"]]
    reaped: list[ReapedProcess]


class HostErrorDetail(TypedDict):
    """A Host start refused: the error with the last lines the Host wrote."""

    error: str  # a stable code, e.g. `invalid_request`, `run_not_found`
    message: str
    log_tail: NotRequired[Any]


class HostError(TypedDict):
    """The Host could not start: the error with the tail of its output."""

    detail: HostErrorDetail


class LogLine(TypedDict):
    """One line of the Host's output, numbered by the daemon (from 0 with each daemon)."""

    offset: int
    time: NotRequired[float]
    generation: NotRequired[int | None]
    stream: NotRequired[str]
    text: str


class HostLogs(TypedDict):
    """A page of Host log lines after a cursor; `overflow` says older lines were dropped."""

    lines: list[LogLine]
    overflow: bool
    next: int


class RetentionPolicy(TypedDict):
    """The most history to keep (docs/storage.md, Retention); both None: the policy is off."""

    max_bytes: int | None  # None: no size limit
    max_age_days: float | None  # None: no age limit


class HistorySize(TypedDict):
    """`/health`'s `history`: the retention policy and the bytes history takes on disk."""

    max_bytes: int | None  # None: no size limit
    max_age_days: float | None  # None: no age limit
    bytes: int  # the database with its WAL, and the files as last counted


class TracingHealth(TypedDict):
    """`/health`'s `tracing`: runs exported as OpenTelemetry traces (docs/tracing.md)."""

    enabled: bool  # spans are being exported
    endpoint: str | None  # the OTLP endpoint set; None: export is off
    protocol: str | None  # `http/protobuf` or `grpc`
    # why nothing is exported although an endpoint is set (OpenTelemetry not installed), with the
    # fix
    problem: str | None
    runs_exported: int
    runs_dropped: int  # finished runs not exported: the export queue was full
    spans_exported: int  # spans the collector took
    spans_failed: int  # spans the collector refused or did not take in time
    spans_dropped: int  # spans lost for any reason, failed ones included
    spans_pending: int  # spans waiting to be sent
    # whether the daemon imported OpenTelemetry (never, with no endpoint set)
    opentelemetry_loaded: bool


class Health(TypedDict):
    """`GET /health`: answered without creating history."""

    status: Literal["ok"]
    version: str
    pid: int
    project: str
    database: str
    host: HostStatus
    active_run_id: str | None
    history_degraded: bool
    # the side of the platform seam the daemon runs: `portable` on macOS, or on Linux with
    # LLAMON_PLAYGROUND_FORCE_PORTABLE=1
    platform: Literal["linux", "portable"]
    history: HistorySize
    tracing: TracingHealth
