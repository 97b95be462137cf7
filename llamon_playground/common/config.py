"""The one settings object of a process, built once at start-up from args + environment.

Each setting is declared once: its default on the dataclass field, its environment variable
and how to read it in one table row (`DAEMON_ENV`, `SYSTEMD_ENV`, `FRONT_ENV`). Nothing else
reads os.environ. Every variable is documented in docs/configuration.md.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from llamon_playground import __version__
from llamon_playground.common.limits import LIMIT_ENV_NAMES, Limits

Environ = Mapping[str, str]

ENV_RUNTIME_BASE = "LLAMON_PLAYGROUND_RUNTIME_DIR"
ENV_TOKEN = "LLAMON_PLAYGROUND_TOKEN"
ENV_TOKEN_FILE = "LLAMON_PLAYGROUND_TOKEN_FILE"
ENV_LOG_FORMAT = "LLAMON_PLAYGROUND_LOG_FORMAT"
# systemd's socket activation: not used, but never passed on to the Host either.
SYSTEMD_LISTEN_ENV = ("LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES")


def project_key(project_dir: Path) -> str:
    """A short stable name for a project: socket paths must fit in 108 bytes however deep it is."""
    return hashlib.sha256(str(project_dir).encode()).hexdigest()[:16]


def default_runtime_base(environ: Environ) -> Path:
    """The folder that holds each project's runtime dir: $LLAMON_PLAYGROUND_RUNTIME_DIR, else
    under $XDG_RUNTIME_DIR, else a per-user folder in the temp dir."""
    explicit = environ.get(ENV_RUNTIME_BASE)
    if explicit:
        return Path(explicit)
    xdg = environ.get("XDG_RUNTIME_DIR")
    if xdg and Path(xdg).is_dir():
        return Path(xdg) / "llamon-playground"
    return Path(tempfile.gettempdir()) / f"llamon-playground-{os.getuid()}"


@dataclass(frozen=True)
class EnvVar:
    """One setting read from the environment: the field it fills, the variable, its parser.

    Unset or empty means the field's own default. A parser answering None (a value systemd
    may hand over malformed) also keeps the default; any other bad value fails start-up.
    """

    field: str
    name: str
    parse: Callable[[str], Any]


def _whole(raw: str) -> int:
    return int(float(raw))  # "5" and "5.0" alike


def _digits(raw: str) -> int | None:
    return int(raw) if raw.isascii() and raw.isdigit() else None


def _switch(raw: str) -> bool:
    return raw != "0"


# How the front reaches the daemon (docs/front-transport.md): "fast", its own pooled client
# and streams lent to the daemon; "plain", aiohttp's client on the Unix socket and streams
# relayed (a baseline to bisect a bug against).
FRONT_TRANSPORTS = ("fast", "plain")


def _transport(raw: str) -> str:
    value = raw.strip().lower()
    if value not in FRONT_TRANSPORTS:
        raise ValueError(f"LLAMON_PLAYGROUND_FRONT_TRANSPORT must be one of "
                         f"{', '.join(FRONT_TRANSPORTS)}, not {raw!r}")
    return value


def _at_least_one(raw: str) -> int:
    value = _whole(raw)
    if value < 1:
        raise ValueError(f"a log size or backup count must be at least 1, not {raw!r}")
    return value


def _from_env(table: tuple[EnvVar, ...], environ: Environ) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for var in table:
        raw = environ.get(var.name)
        if raw:
            value = var.parse(raw)
            if value is not None:
                values[var.field] = value
    return values


@dataclass(frozen=True)
class FrontSettings:
    """What only the front reads: the token the environment gives (api/token_store.py),
    its connection limits (api/connections.py) and how it reaches the daemon (api/app.py)."""

    # repr=False keeps the token out of any log line or traceback that prints the settings.
    token: str | None = field(default=None, repr=False)
    token_file: Path | None = None
    # A connection with no request in progress (or still sending its headers) is closed
    # after this many seconds; open SSE streams are requests in progress.
    idle_timeout: float = 15.0
    # A connection gets this many seconds to send a request the door admits (a valid
    # token); until then it is the first to go when the cap is reached (api/slots.py).
    head_timeout: float = 5.0
    max_connections: int = 256  # and never more than half the open-files limit allows
    transport: str = "fast"  # one of FRONT_TRANSPORTS


FRONT_ENV = (
    EnvVar("token", ENV_TOKEN, str),
    EnvVar("token_file", ENV_TOKEN_FILE, Path),
    EnvVar("idle_timeout", "LLAMON_PLAYGROUND_FRONT_IDLE_TIMEOUT", float),
    EnvVar("head_timeout", "LLAMON_PLAYGROUND_FRONT_HEAD_TIMEOUT", float),
    EnvVar("max_connections", "LLAMON_PLAYGROUND_FRONT_MAX_CONNECTIONS", _whole),
    EnvVar("transport", "LLAMON_PLAYGROUND_FRONT_TRANSPORT", _transport),
)


@dataclass(frozen=True)
class LogFiles:
    """How big a log file grows before it rotates, and how many rotated files are kept
    (docs/operations.md, "Logs"): `daemon.log` and `front.log` (written by the process
    itself when given `--log-file`) and the Host's `host.log`. The most a project's logs
    take on disk is (backups + 1) x size, each."""

    file_bytes: int = 10 * 1024 * 1024
    file_backups: int = 3
    host_file_bytes: int = 5 * 1024 * 1024
    host_file_backups: int = 1


LOG_ENV = (
    EnvVar("file_bytes", "LLAMON_PLAYGROUND_LOG_FILE_BYTES", _at_least_one),
    EnvVar("file_backups", "LLAMON_PLAYGROUND_LOG_FILE_BACKUPS", _at_least_one),
    EnvVar("host_file_bytes", "LLAMON_PLAYGROUND_HOST_LOG_FILE_BYTES", _at_least_one),
    EnvVar("host_file_backups", "LLAMON_PLAYGROUND_HOST_LOG_FILE_BACKUPS", _at_least_one),
)


def log_files(environ: Environ | None = None) -> LogFiles:
    """The log file sizes the environment sets (read before the settings: logging starts
    first)."""
    return LogFiles(**_from_env(LOG_ENV, os.environ if environ is None else environ))


@dataclass(frozen=True)
class Settings:
    """Everything a daemon or front is configured with, read once at start-up and passed in;
    the paths it derives are properties, so the layout is stated in one place."""

    project_dir: Path
    runtime_base: Path
    version: str = __version__
    host_start_timeout: float = 30.0
    host_stop_grace: float = 3.0
    keepalive_interval: float = 15.0
    max_request_bytes: int = 16 * 1024 * 1024
    event_ring_size: int = 4096
    # The watcher's quiet period grows with a burst, from the shortest to the longest
    # (host_manager/watch/watcher.py, QuietPeriod).
    watch_quiet: float = 0.05
    watch_quiet_max: float = 0.5
    crash_limit: int = 5
    crash_window: float = 60.0
    crash_min_uptime: float = 5.0
    backoff_base: float = 0.5
    backoff_cap: float = 15.0
    db_busy_timeout_ms: int = 5000
    watch: bool = True
    # Start the Host as the daemon starts, so the first run is not a cold start (no run and
    # no history come of it: docs/host.md, "The first run after start").
    prewarm: bool = True
    # systemd's notify protocol (daemon/sd_notify.py); unset outside a Type=notify unit.
    notify_socket: str | None = None
    watchdog_usec: int = 0
    watchdog_pid: int | None = None
    host_stall_timeout: float = 30.0
    # The retention policy (daemon/store/upkeep/retention.py): the most history to keep, by size
    # (bytes) and by age (days); 0 is off, the default.
    history_max_bytes: int = 0
    history_max_age_days: float = 0.0
    # History somewhere else than the project's .llamon/playground: `suite run --ci`'s
    # private daemon keeps a temporary one, leaving the project's own untouched.
    history_dir: Path | None = None
    # Built with the rest (one builder per process); the front reads it, and the daemon its
    # max_connections (the cap on the streams it writes on lent connections).
    front: FrontSettings = field(default_factory=FrontSettings)
    # The sizes a request, a bundle or a Host may bring in (common/limits.py).
    limits: Limits = field(default_factory=Limits)
    logs: LogFiles = field(default_factory=LogFiles)

    @cached_property  # asked for on every lent stream: its hash is taken once
    def runtime_dir(self) -> Path:
        """This project's private runtime directory (sockets, lock, Host log), keyed by its path."""
        return self.runtime_base / project_key(self.project_dir)

    @property
    def socket_path(self) -> Path:
        """The daemon's Unix socket."""
        return self.runtime_dir / "daemon.sock"

    @property
    def handover_path(self) -> Path:
        """Where a front lends the daemon client connections (common/handover.py).
        No longer a name than daemon.sock's, whose path is the one checked for length."""
        return self.runtime_dir / "hand.sock"

    @property
    def lock_path(self) -> Path:
        """Held by the one daemon of this project."""
        return self.runtime_dir / "daemon.lock"

    @property
    def discovery_path(self) -> Path:
        """What a running daemon writes about itself, for the CLI and the front to find it."""
        return self.runtime_dir / "daemon.json"

    @property
    def host_log_path(self) -> Path:
        """Where the Host's output is appended."""
        return self.runtime_dir / "host.log"

    @property
    def host_record_path(self) -> Path:
        """The running Host's record, so the next daemon can reap a Host left behind."""
        return self.runtime_dir / "host.json"

    @property
    def front_token_path(self) -> Path:
        """The front's token, shared by every front of this project."""
        return self.runtime_dir / "front.token"

    @property
    def front_lock_path(self) -> Path:
        """Held shared by every running front: the token is rotated only when none runs."""
        return self.runtime_dir / "front.lock"

    @property
    def front_start_lock_path(self) -> Path:
        """Held exclusively for the moment a front picks or drops the token."""
        return self.runtime_dir / "front.start.lock"

    @property
    def state_dir(self) -> Path:
        """Where history lives: inside the project (or `history_dir` when one is given)."""
        return self.history_dir or self.project_dir / ".llamon" / "playground"

    @property
    def db_path(self) -> Path:
        """The SQLite history."""
        return self.state_dir / "playground.sqlite3"

    @property
    def files_dir(self) -> Path:
        """The blob store's folder."""
        return self.state_dir / "files"


DAEMON_ENV = (
    EnvVar("host_start_timeout", "LLAMON_PLAYGROUND_HOST_START_TIMEOUT", float),
    EnvVar("host_stop_grace", "LLAMON_PLAYGROUND_HOST_STOP_GRACE", float),
    EnvVar("keepalive_interval", "LLAMON_PLAYGROUND_KEEPALIVE", float),
    EnvVar("watch_quiet", "LLAMON_PLAYGROUND_WATCH_QUIET", float),
    EnvVar("watch_quiet_max", "LLAMON_PLAYGROUND_WATCH_QUIET_MAX", float),
    EnvVar("crash_limit", "LLAMON_PLAYGROUND_CRASH_LIMIT", _whole),
    EnvVar("crash_window", "LLAMON_PLAYGROUND_CRASH_WINDOW", float),
    EnvVar("crash_min_uptime", "LLAMON_PLAYGROUND_CRASH_MIN_UPTIME", float),
    EnvVar("backoff_base", "LLAMON_PLAYGROUND_BACKOFF_BASE", float),
    EnvVar("backoff_cap", "LLAMON_PLAYGROUND_BACKOFF_CAP", float),
    EnvVar("db_busy_timeout_ms", "LLAMON_PLAYGROUND_DB_BUSY_TIMEOUT_MS", _whole),
    EnvVar("watch", "LLAMON_PLAYGROUND_WATCH", _switch),
    EnvVar("prewarm", "LLAMON_PLAYGROUND_PREWARM", _switch),
    EnvVar("host_stall_timeout", "LLAMON_PLAYGROUND_HOST_STALL_TIMEOUT", float),
    EnvVar("history_max_bytes", "LLAMON_PLAYGROUND_HISTORY_MAX_BYTES", _whole),
    EnvVar("history_max_age_days", "LLAMON_PLAYGROUND_HISTORY_MAX_AGE_DAYS", float),
    EnvVar("history_dir", "LLAMON_PLAYGROUND_HISTORY_DIR", Path),
)
# One variable a limit (the names live beside the limits, common/limits.py).
LIMITS_ENV = tuple(EnvVar(name, env, _whole) for name, env in LIMIT_ENV_NAMES.items())
# systemd's notify protocol, set by a Type=notify unit (systemd/*.service).
SYSTEMD_ENV = (
    EnvVar("notify_socket", "NOTIFY_SOCKET", str),
    EnvVar("watchdog_usec", "WATCHDOG_USEC", _digits),
    EnvVar("watchdog_pid", "WATCHDOG_PID", _digits),
)
# Never handed down to the Host: the front's credentials and systemd's per-unit protocol.
DAEMON_ONLY_ENV = (*(var.name for var in FRONT_ENV + SYSTEMD_ENV), *SYSTEMD_LISTEN_ENV)


def log_json(environ: Environ | None = None) -> bool:
    """`LLAMON_PLAYGROUND_LOG_FORMAT=json`: one JSON object per log line."""
    env = os.environ if environ is None else environ
    return env.get(ENV_LOG_FORMAT, "text").lower() == "json"


def build_settings(project: str | os.PathLike[str], environ: Environ | None = None) -> Settings:
    """The Settings for `project`, with every knob read from `environ` (the process's environment
    by default)."""
    env = os.environ if environ is None else environ
    return Settings(project_dir=Path(project).resolve(), runtime_base=default_runtime_base(env),
                    front=FrontSettings(**_from_env(FRONT_ENV, env)),
                    limits=Limits(**_from_env(LIMITS_ENV, env)), logs=log_files(env),
                    **_from_env(DAEMON_ENV + SYSTEMD_ENV, env))
