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
"""

from __future__ import annotations

import contextvars
import logging
import re
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
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
    global _fallback
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
    tokens = [REQUEST_ID.set(request_id), RUN_ID.set(run_id)]
    try:
        yield
    finally:
        RUN_ID.reset(tokens[1])
        REQUEST_ID.reset(tokens[0])


def current_context() -> dict[str, Any]:
    try:
        fields = dict(_fallback())
    except Exception:  # a log line must never fail because of its decoration
        fields = {}
    if REQUEST_ID.get() is not None:
        fields["request_id"] = REQUEST_ID.get()
    if RUN_ID.get() is not None:
        fields["run_id"] = RUN_ID.get()
    return {k: fields[k] for k in CONTEXT_FIELDS if fields.get(k) is not None}


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


def setup_logging(*, verbose: bool = False, json_lines: bool = False) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if json_lines else TextFormatter())
    handler.addFilter(SafeRecords())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(logging.DEBUG if verbose else logging.INFO)
