"""The size checks of what a request or a bundle brings in (docs/security.md, "Limits").

Run before redaction and before anything is written, so a value over its limit costs no
more than its limit to refuse.
"""

from __future__ import annotations

from typing import Any

from llamon_playground.common.limits import (
    DEFAULT_LIMITS,
    LIMIT_ENV_NAMES,
    Limits,
    json_size_over,
)
from llamon_playground.daemon.errors import BadRequest, PayloadTooLarge


def too_large(what: str, limit: int, field: str, code: str) -> PayloadTooLarge:
    """413 naming the limit and the setting that raises it."""
    return PayloadTooLarge(f"{what} is larger than {limit} bytes (the limit; "
                           f"{LIMIT_ENV_NAMES[field]} raises it)", code=code, limit=limit)


def check_metadata(metadata: dict[str, Any], where: str = "metadata",
                   limits: Limits = DEFAULT_LIMITS) -> None:
    """413 `metadata_too_large` when the whole, or one top-level value, is over its limit.
    The whole first: it bounds the walk over the values."""
    if json_size_over(metadata, limits.metadata_bytes) is not None:
        raise too_large(where, limits.metadata_bytes, "metadata_bytes", "metadata_too_large")
    for key, value in metadata.items():
        if json_size_over(value, limits.metadata_value_bytes) is not None:
            raise too_large(f"{where}[{str(key)[:64]!r}]", limits.metadata_value_bytes,
                            "metadata_value_bytes", "metadata_too_large")


NAME_FIELDS = ("node", "evaluator", "name")


def check_capture_event(event: dict[str, Any], number: int, where: str,
                        limits: Limits = DEFAULT_LIMITS) -> None:
    """A capture event: its names, its size and its place in the run's count (`number`,
    from 1). 413 `capture_event_too_large` or `too_many_capture_events`, 400 `name_too_long` for a name."""
    if number > limits.capture_events_per_run:
        raise PayloadTooLarge(
            f"a run holds at most {limits.capture_events_per_run} capture events (the limit; "
            f"{LIMIT_ENV_NAMES['capture_events_per_run']} raises it)",
            code="too_many_capture_events", limit=limits.capture_events_per_run)
    for key in NAME_FIELDS:
        name = event.get(key)
        if isinstance(name, str) and len(name) > limits.name_chars:
            raise BadRequest(
                f"{where}.{key} is longer than {limits.name_chars} characters (the limit; "
                f"{LIMIT_ENV_NAMES['name_chars']} raises it)", code="name_too_long",
                limit=limits.name_chars)
    if json_size_over(event, limits.capture_event_bytes) is not None:
        raise too_large(where, limits.capture_event_bytes, "capture_event_bytes",
                        "capture_event_too_large")
