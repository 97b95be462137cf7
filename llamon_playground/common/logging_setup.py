"""Structured log lines for the daemon and the front (docs/operations.md, "Logs").

Every line carries the request id, run id and Host generation it belongs to, as text or,
on request, as one JSON object per line. Whatever a line says, it never carries a secret:
the formatter scrubs the registered secrets (the front's token and cookie) and anything
shaped like a credential (`token=...`, `Bearer ...`) from the finished line, tracebacks and
third-party messages included, because a secret can hide in an exception text or a Referer.
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
    re.compile(r"(?i)(llamon-playground-\d+=)[^\s;\"'<>]+"),  # the front's cookie
)

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
    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        context = current_context()
        if context:
            line += " [" + " ".join(f"{k}={v}" for k, v in context.items()) + "]"
        return scrub(line)


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
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(logging.DEBUG if verbose else logging.INFO)
