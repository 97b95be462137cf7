"""What the API answers about the Host and the daemon: status, logs, health."""

from typing import Annotated, Any, Literal, NotRequired, TypedDict

from llamon_playground.common.wire.history import ErrorDetail
from llamon_playground.common.wire.rules import Doc
from llamon_playground.common.wire.words import HostStateName


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
    module: NotRequired[Annotated[str, Doc("host_module_missing: the module the Host lacks")]]


class WatchCounters(TypedDict):
    """The file watcher's counters: change batches seen and restarts they caused, and the
    outside edit it has noticed and not applied yet."""

    batches: NotRequired[int]
    restarts: NotRequired[int]
    pending: NotRequired[Annotated[list[str], Doc(
        "the watched files of a burst of changes still in its quiet period or being "
        "applied (a run sent now waits for the new generation); empty when none")]]


class ReapedProcess(TypedDict):
    """A process of an old Host tree killed at start or stop."""

    pid: int
    cmdline: NotRequired[list[str]]
    when: str
    at: NotRequired[Annotated[float, Doc("Unix time")]]


class HostLastError(TypedDict):
    """Why the Host's latest generation died, read from its output (docs/host.md)."""

    exception: Annotated[str, Doc("the traceback's last line, e.g. `RuntimeError: boom`")]
    traceback: Annotated[list[str], Doc("the traceback without the Playground's own "
                                        "preloader and runpy frames, the exception last")]
    frames_left_out: Annotated[int, Doc("how many of the Playground's own frames were left out")]
    generation: int


class HostStatus(TypedDict):
    """The Host's state machine and its current generation."""

    state: HostStateName
    generation: int | None
    pid: int | None
    url: str | None
    a2a_url: Annotated[str | None, Doc("the project's A2A address, kept across generations "
                                       "and daemon restarts (None before the first start)")]
    started_at: Annotated[float | None, Doc("Unix time")]
    ready_at: Annotated[float | None, Doc("Unix time")]
    restarts: int
    crashes: int
    last_exit_code: Annotated[int | None, Doc("negative: the signal that ended it")]
    last_stop_step: str | None
    backoff_until: Annotated[float | None, Doc("Unix time")]
    start_mode: Annotated[Literal["warm", "cold"] | None,
                          Doc("forked from the warm parent, or a new process")]
    start_reason: Annotated[str | None, Doc("why that mode (docs/host.md)")]
    warm_parent: WarmParent | None
    warnings: list[HostWarning]
    last_error: Annotated[HostLastError | None,
                          Doc("while backing off or in a crashloop: the last traceback the "
                              "Host wrote (None when it wrote none, or is not failing)")]
    watch: NotRequired[Annotated[WatchCounters, Doc("GET /host and the control actions")]]
    platform: NotRequired[Annotated[
        Literal["linux", "portable"],
        Doc("GET /host and the control actions: the side of the platform seam the daemon "
            "runs (docs/operations.md)")]]
    reaped: list[ReapedProcess]


class HostErrorDetail(ErrorDetail):
    """A Host start refused: the error with the last lines the Host wrote."""

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

    max_bytes: Annotated[int | None, Doc("None: no size limit")]
    max_age_days: Annotated[float | None, Doc("None: no age limit")]


class HistorySize(RetentionPolicy):
    """`/health`'s `history`: the retention policy and the bytes history takes on disk."""

    bytes: Annotated[int, Doc("the database with its WAL, and the files as last counted")]


class TracingHealth(TypedDict):
    """`/health`'s `tracing`: runs exported as OpenTelemetry traces (docs/tracing.md)."""

    enabled: Annotated[bool, Doc("spans are being exported")]
    endpoint: Annotated[str | None, Doc("the OTLP endpoint set; None: export is off")]
    protocol: Annotated[str | None, Doc("`http/protobuf` or `grpc`")]
    problem: Annotated[str | None, Doc("why nothing is exported although an endpoint is "
                                       "set (OpenTelemetry not installed), with the fix")]
    runs_exported: int
    runs_dropped: Annotated[int, Doc("finished runs not exported: the export queue was full")]
    spans_exported: Annotated[int, Doc("spans the collector took")]
    spans_failed: Annotated[int, Doc("spans the collector refused or did not take in time")]
    spans_dropped: Annotated[int, Doc("spans lost for any reason, failed ones included")]
    spans_pending: Annotated[int, Doc("spans waiting to be sent")]
    opentelemetry_loaded: Annotated[bool, Doc("whether the daemon imported OpenTelemetry "
                                              "(never, with no endpoint set)")]


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
    platform: Annotated[Literal["linux", "portable"],
                        Doc("the side of the platform seam the daemon runs: `portable` on "
                            "macOS, or on Linux with LLAMON_PLAYGROUND_FORCE_PORTABLE=1")]
    history: HistorySize
    tracing: TracingHealth
