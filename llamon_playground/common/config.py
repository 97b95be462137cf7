"""The one settings object of a daemon process, built once at start-up from args + environment.

Nothing else in the daemon reads os.environ.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from llamon_playground import __version__

ENV_RUNTIME_BASE = "LLAMON_PLAYGROUND_RUNTIME_DIR"
ENV_TOKEN = "LLAMON_PLAYGROUND_TOKEN"
ENV_TOKEN_FILE = "LLAMON_PLAYGROUND_TOKEN_FILE"
ENV_LOG_FORMAT = "LLAMON_PLAYGROUND_LOG_FORMAT"
# Never handed down to the Host: the front's credentials and systemd's per-unit protocol.
DAEMON_ONLY_ENV = (ENV_TOKEN, ENV_TOKEN_FILE, "NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID",
                   "LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES")


def project_key(project_dir: Path) -> str:
    """A short stable name for a project: socket paths must fit in 108 bytes however deep it is."""
    return hashlib.sha256(str(project_dir).encode()).hexdigest()[:16]


def default_runtime_base(environ: dict[str, str] | os._Environ[str]) -> Path:
    explicit = environ.get(ENV_RUNTIME_BASE)
    if explicit:
        return Path(explicit)
    xdg = environ.get("XDG_RUNTIME_DIR")
    if xdg and Path(xdg).is_dir():
        return Path(xdg) / "llamon-playground"
    return Path(tempfile.gettempdir()) / f"llamon-playground-{os.getuid()}"


@dataclass(frozen=True)
class Settings:
    project_dir: Path
    runtime_base: Path
    version: str = __version__
    host_start_timeout: float = 30.0
    host_stop_grace: float = 3.0
    keepalive_interval: float = 15.0
    max_request_bytes: int = 16 * 1024 * 1024
    event_ring_size: int = 4096
    watch_quiet: float = 0.3
    crash_limit: int = 5
    crash_window: float = 60.0
    crash_min_uptime: float = 5.0
    backoff_base: float = 0.5
    backoff_cap: float = 15.0
    db_busy_timeout_ms: int = 5000
    watch: bool = True
    # The front's token when given by the environment (issue 6); repr=False keeps it out of
    # any log line or traceback that prints the settings.
    token: str | None = field(default=None, repr=False)
    token_file: Path | None = None
    # systemd's notify protocol (daemon/sd_notify.py); unset outside a Type=notify unit.
    notify_socket: str | None = None
    watchdog_usec: int = 0
    watchdog_pid: int | None = None
    host_stall_timeout: float = 30.0

    @property
    def runtime_dir(self) -> Path:
        return self.runtime_base / project_key(self.project_dir)

    @property
    def socket_path(self) -> Path:
        return self.runtime_dir / "daemon.sock"

    @property
    def lock_path(self) -> Path:
        return self.runtime_dir / "daemon.lock"

    @property
    def discovery_path(self) -> Path:
        return self.runtime_dir / "daemon.json"

    @property
    def host_log_path(self) -> Path:
        return self.runtime_dir / "host.log"

    @property
    def host_record_path(self) -> Path:
        return self.runtime_dir / "host.json"

    @property
    def front_token_path(self) -> Path:
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
        return self.project_dir / ".llamon" / "playground"

    @property
    def db_path(self) -> Path:
        return self.state_dir / "playground.sqlite3"

    @property
    def files_dir(self) -> Path:
        return self.state_dir / "files"


def _float_env(environ: dict[str, str] | os._Environ[str], name: str, default: float) -> float:
    raw = environ.get(name)
    if raw is None or raw == "":
        return default
    return float(raw)


def _int_env(environ: dict[str, str] | os._Environ[str], name: str) -> int | None:
    raw = environ.get(name, "")
    return int(raw) if raw.isdigit() else None


def log_json(environ: dict[str, str] | os._Environ[str] | None = None) -> bool:
    """`LLAMON_PLAYGROUND_LOG_FORMAT=json`: one JSON object per log line."""
    env = os.environ if environ is None else environ
    return env.get(ENV_LOG_FORMAT, "text").lower() == "json"


def build_settings(project: str | os.PathLike[str],
                   environ: dict[str, str] | os._Environ[str] | None = None) -> Settings:
    env = os.environ if environ is None else environ
    return Settings(
        project_dir=Path(project).resolve(),
        runtime_base=default_runtime_base(env),
        host_start_timeout=_float_env(env, "LLAMON_PLAYGROUND_HOST_START_TIMEOUT", 30.0),
        host_stop_grace=_float_env(env, "LLAMON_PLAYGROUND_HOST_STOP_GRACE", 3.0),
        keepalive_interval=_float_env(env, "LLAMON_PLAYGROUND_KEEPALIVE", 15.0),
        watch_quiet=_float_env(env, "LLAMON_PLAYGROUND_WATCH_QUIET", 0.3),
        crash_limit=int(_float_env(env, "LLAMON_PLAYGROUND_CRASH_LIMIT", 5)),
        crash_window=_float_env(env, "LLAMON_PLAYGROUND_CRASH_WINDOW", 60.0),
        crash_min_uptime=_float_env(env, "LLAMON_PLAYGROUND_CRASH_MIN_UPTIME", 5.0),
        backoff_base=_float_env(env, "LLAMON_PLAYGROUND_BACKOFF_BASE", 0.5),
        backoff_cap=_float_env(env, "LLAMON_PLAYGROUND_BACKOFF_CAP", 15.0),
        db_busy_timeout_ms=int(_float_env(env, "LLAMON_PLAYGROUND_DB_BUSY_TIMEOUT_MS", 5000)),
        watch=env.get("LLAMON_PLAYGROUND_WATCH", "1") != "0",
        host_stall_timeout=_float_env(env, "LLAMON_PLAYGROUND_HOST_STALL_TIMEOUT", 30.0),
        token=env.get(ENV_TOKEN) or None,
        token_file=Path(env[ENV_TOKEN_FILE]) if env.get(ENV_TOKEN_FILE) else None,
        notify_socket=env.get("NOTIFY_SOCKET") or None,
        watchdog_usec=_int_env(env, "WATCHDOG_USEC") or 0,
        watchdog_pid=_int_env(env, "WATCHDOG_PID"),
    )
