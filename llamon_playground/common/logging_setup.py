"""Structured log lines for the daemon and the front (docs/operations.md, "Logs").

Every line carries the request id, run id and Host generation it belongs to, as text or,
on request, as one JSON object per line. Whatever a line says, it never carries a secret:
the formatter scrubs the registered secrets (the front's token and cookie) and anything
shaped like a credential (`token=...`, `Bearer ...`) from the finished line, tracebacks and
third-party messages included, because a secret can hide in an exception text or a Referer.

Nor can a line be forged: control characters in a message (a request path with `%0a`, an
escape sequence) are escaped, and in text lines every line of a record after its first is
indented, so nothing a client sends can start a line of its own. A malformed request
(aiohttp's parser refused it, already answered 400) is one DEBUG line, never an ERROR with a
traceback: a client must not be able to fill the log.

Given a file (`--log-file`: `daemon.log` and `up --detach`'s `front.log`), a process writes
it itself and rotates it by size (`RotatingLog`), so a machine can keep its logs for good.
"""

from __future__ import annotations

import contextvars
import logging
import logging.handlers
import os
import re
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson

REQUEST_ID: contextvars.ContextVar[str | None] = contextvars.ContextVar("request_id",
                                                                         default=None)
RUN_ID: contextvars.ContextVar[str | None] = contextvars.ContextVar("run_id", default=None)
CONTEXT_FIELDS = ("request_id", "run_id", "generation")
REDACTED = "<redacted>"
# Credentials in any text: query parameters, headers, cookies as they appear in messages.
CREDENTIAL_PATTERNS = (
    re.compile(r"(?i)(token=)[^\s&;\"'<>]+"),
    re.compile(r"(?i)(bearer\s+)[^\s\"'<>,;]+"),
    re.compile(r"(?i)(authorization:\s*)[^\r\n\"']+"),
    re.compile(r"(?i)(llamon-playground-\d+(?:-[0-9a-f]+)?=)[^\s;\"'<>]+"),  # the cookie
)

# C0 controls, DEL, C1 controls and the Unicode line and paragraph separators.
_CONTROLS = {c: f"\\x{c:02x}" for c in (*range(0x20), *range(0x7f, 0xa0))}
_CONTROLS.update({0x2028: "\\u2028", 0x2029: "\\u2029"})
CONTINUATION = "\n    "  # how a record's second and later lines start (text lines)


def escape_controls(text: str) -> str:
    """A newline becomes the four characters `\\x0a`: one logged value, one line."""
    return text.translate(_CONTROLS)


class SafeRecords(logging.Filter):
    """On the handler, so every logger's records pass: messages lose their control
    characters; aiohttp's report of a request its parser refused becomes one DEBUG line."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and _is_malformed_request(record.exc_info[1]):
            exc = record.exc_info[1]
            first = str(getattr(exc, "message", exc)).strip().splitlines()[:1]
            record.msg = (f"{record.getMessage()}: malformed request refused "
                          f"({type(exc).__name__}: {first[0] if first else ''})")
            record.args = ()
            record.exc_info, record.exc_text = None, None
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
            if not logging.getLogger().isEnabledFor(logging.DEBUG):
                return False
        record.msg, record.args = escape_controls(record.getMessage()), ()
        return True


def _is_malformed_request(exc: BaseException | None) -> bool:
    return exc is not None and type(exc).__module__ == "aiohttp.http_exceptions"


# Filled in by a composition root: what the process knows without a request (the active
# run, the Host generation). Contextvars set by a request take precedence.
_fallback: Callable[[], dict[str, Any]] = dict
_secrets: set[str] = set()


def set_context_fallback(provider: Callable[[], dict[str, Any]]) -> None:
    """What log lines carry when no request set a context: `provider()`'s fields (the active run,
    the Host generation)."""
    global _fallback  # noqa: PLW0603 (set once by the composition root)
    _fallback = provider


def register_secret(value: str) -> None:
    """Never let `value` reach a log line (the front's token, its cookie value)."""
    if value:
        _secrets.add(value)


def scrub(text: str) -> str:
    for secret in _secrets:
        if secret in text:
            text = text.replace(secret, REDACTED)
    for pattern in CREDENTIAL_PATTERNS:
        text = pattern.sub(rf"\g<1>{REDACTED}", text)
    return text


@contextmanager
def log_context(*, request_id: str | None = None, run_id: str | None = None) -> Iterator[None]:
    """Within the block, log lines carry `request_id` and `run_id`; the previous values come back
    after it."""
    tokens = [REQUEST_ID.set(request_id), RUN_ID.set(run_id)]
    try:
        yield
    finally:
        RUN_ID.reset(tokens[1])
        REQUEST_ID.reset(tokens[0])


def current_context() -> dict[str, Any]:
    try:
        fields = dict(_fallback())
    except Exception:  # noqa: BLE001 (a log line must never fail because of its decoration)
        fields = {}
    if REQUEST_ID.get() is not None:
        fields["request_id"] = REQUEST_ID.get()
    if RUN_ID.get() is not None:
        fields["run_id"] = RUN_ID.get()
    return {k: fields[k] for k in CONTEXT_FIELDS if fields.get(k) is not None}


class Summary:
    """Events of a kind a client can repeat at will (refused requests) as one line per key
    per `interval` with a count, not one line each: the log grows with the minutes, not
    with the requests. The first of a key is logged at once; the rest are counted and said
    in one line once its interval has passed (at the next one, or by `flush`, which the
    owner calls on a timer and at shutdown). Keys are a fixed set (reasons), so memory is
    too."""

    def __init__(self, logger: logging.Logger, level: int = logging.INFO,
                 interval: float = 60.0, clock: Callable[[], float] = time.monotonic) -> None:
        self._log = logger
        self._level = level
        self._interval = interval
        self._clock = clock
        self._windows: dict[str, tuple[float, int]] = {}  # key: (since, counted since)

    def note(self, key: str, message: str, *args: object) -> None:
        """One event of `key`; `message % args` is what the first of a window says."""
        now = self._clock()
        window = self._windows.get(key)
        if window is None:
            self._windows[key] = (now, 0)
            self._log.log(self._level, message + " (more like it: one line a minute at most)",
                          *args)
            return
        self._windows[key] = (window[0], window[1] + 1)
        if now - window[0] >= self._interval:
            self._say(key, now)

    def flush(self, force: bool = False) -> None:
        """Say the counts whose interval has passed (all of them, `force`); a key quiet for a
        whole interval is forgotten, so its next event is logged at once again."""
        now = self._clock()
        for key, (since, count) in list(self._windows.items()):
            if force or now - since >= self._interval:
                if count:
                    self._say(key, now)
                else:
                    del self._windows[key]

    def _say(self, key: str, now: float) -> None:
        since, count = self._windows[key]
        self._log.log(self._level, "%d more %s in the last %.0f s", count, key, now - since)
        self._windows[key] = (now, 0)


class TextFormatter(logging.Formatter):
    """One scrubbed text line per record, with the request's context; continuation lines are
    indented, so a message cannot forge a line of its own."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        context = current_context()
        if context:
            line += " [" + " ".join(f"{k}={v}" for k, v in context.items()) + "]"
        return scrub(line.replace("\n", CONTINUATION))


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, context, exception."""

    def format(self, record: logging.LogRecord) -> str:
        doc: dict[str, Any] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(), "logger": record.name,
            "message": record.getMessage(), "pid": record.process, **current_context()}
        if record.exc_info:
            doc["exception"] = self.formatException(record.exc_info)
        # Scrub the serialized line: secrets inside any field, escaped or not, go.
        return scrub(orjson.dumps(doc, default=str).decode())


class RotatingLog(logging.handlers.RotatingFileHandler):
    """A log file of the process's own, 0600, rotated by size (`path.1` ... `path.<backups>`).

    File descriptor 2 follows the current file: whatever the process writes to stderr past
    the logging module (a fatal traceback, a thread's unhandled exception) lands in it and
    counts toward its size. Another process logging to the same file (a second front of
    `up --detach`) may rotate it: the file is reopened when its name leads elsewhere."""

    def __init__(self, path: Path, max_bytes: int, backups: int,
                 follow_stderr: bool = True) -> None:
        _create_private(path)
        self._stderr = follow_stderr  # off in a test process, whose stderr is pytest's
        super().__init__(path, maxBytes=max_bytes, backupCount=backups, encoding="utf-8")
        self._follow_stderr()

    def shouldRollover(self, record: logging.LogRecord) -> int:
        if self.stream is not None and not self._still_ours():
            self.stream.close()
            self.stream = None  # type: ignore[assignment,unused-ignore]  # reopened below
            should = super().shouldRollover(record)
            self._follow_stderr()
            return should
        return super().shouldRollover(record)

    def rotate(self, source: str, dest: str) -> None:
        super().rotate(source, dest)
        if source == self.baseFilename:
            _create_private(Path(source))  # what doRollover opens next is 0600 too

    def doRollover(self) -> None:
        super().doRollover()
        self._follow_stderr()

    def _still_ours(self) -> bool:
        stream = self.stream
        if stream is None:
            return False
        try:
            return os.stat(self.baseFilename).st_ino == os.fstat(stream.fileno()).st_ino
        except OSError:
            return False

    def _follow_stderr(self) -> None:
        if self._stderr and self.stream is not None:
            sys.stderr.flush()
            os.dup2(self.stream.fileno(), 2)


def _create_private(path: Path) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
    try:
        os.fchmod(fd, 0o600)  # a file an older version made 0644
    finally:
        os.close(fd)


def setup_logging(*, verbose: bool = False, json_lines: bool = False,
                  log_file: Path | None = None, file_bytes: int = 10 * 1024 * 1024,
                  file_backups: int = 3) -> None:
    """The process's one log handler: stderr, or `log_file` rotated at `file_bytes` with
    `file_backups` rotated files kept (common/config.py, `LogFiles`)."""
    handler: logging.Handler = (RotatingLog(log_file, file_bytes, file_backups) if log_file
                                else logging.StreamHandler(sys.stderr))
    handler.setFormatter(JsonFormatter() if json_lines else TextFormatter())
    handler.addFilter(SafeRecords())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(logging.DEBUG if verbose else logging.INFO)
