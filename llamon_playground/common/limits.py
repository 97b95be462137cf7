"""Every size the daemon accepts has a limit, and every limit has a name (docs/security.md,
"Limits").

`Limits` holds the ones a developer may raise (each has an environment variable, read by
common/config.py into `Settings.limits`); the fixed ones stay constants beside the code that
checks them and are listed in the same table of the docs. The checks here are pure and cheap:
they stop walking a value as soon as it is over its limit, so a 200 MiB string costs no more
than a 257 KiB one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import orjson

KIB = 1024
MIB = 1024 * KIB


@dataclass(frozen=True)
class Limits:
    """The limits a setting can raise; the defaults keep the daemon small."""

    metadata_bytes: int = 256 * KIB  # a session's or a run's metadata, as JSON
    metadata_value_bytes: int = 64 * KIB  # one top-level value of it, as JSON
    host_event_bytes: int = 16 * MIB  # one event a Host streams (its SSE `data`)
    host_line_bytes: int = 16 * MIB  # one line of a Host's event stream
    run_output_bytes: int = 256 * MIB  # everything a run's Host streams, in all
    host_log_bytes: int = 8 * MIB  # Host log text the daemon keeps in memory
    capture_event_bytes: int = 64 * KIB  # one capture event, as JSON
    capture_events_per_run: int = 10_000
    name_chars: int = 256  # a capture event's node or evaluator name


DEFAULT_LIMITS = Limits()

# A text part over this many UTF-8 bytes (an input's or a Host's answer) is stored in the
# blob store, as files are; history keeps its first TEXT_EXCERPT_CHARS characters, its size
# and its sha256, and `GET /runs/{id}` answers that excerpt with a link to the whole text.
# So no answer, row or event grows with one text's size (docs/storage.md, "Large text").
TEXT_INLINE_BYTES = 64 * KIB
TEXT_EXCERPT_CHARS = 16 * KIB

# The environment variable of each field (docs/configuration.md); config.py reads them.
LIMIT_ENV_NAMES = {
    "metadata_bytes": "LLAMON_PLAYGROUND_MAX_METADATA_BYTES",
    "metadata_value_bytes": "LLAMON_PLAYGROUND_MAX_METADATA_VALUE_BYTES",
    "host_event_bytes": "LLAMON_PLAYGROUND_MAX_HOST_EVENT_BYTES",
    "host_line_bytes": "LLAMON_PLAYGROUND_MAX_HOST_LINE_BYTES",
    "run_output_bytes": "LLAMON_PLAYGROUND_MAX_RUN_OUTPUT_BYTES",
    "host_log_bytes": "LLAMON_PLAYGROUND_MAX_HOST_LOG_BYTES",
    "capture_event_bytes": "LLAMON_PLAYGROUND_MAX_CAPTURE_EVENT_BYTES",
    "capture_events_per_run": "LLAMON_PLAYGROUND_MAX_CAPTURE_EVENTS",
    "name_chars": "LLAMON_PLAYGROUND_MAX_NAME_CHARS",
}


def json_size_over(value: Any, limit: int) -> int | None:
    """None when `value`, as compact JSON, takes at most `limit` bytes; else a size over it.

    Strings count their bytes as stored: UTF-8, quotes and escapes (`\\n` is 2 bytes,
    `\\u0000` 6), numbers their `repr`, containers their brackets, colons and commas: the
    size orjson writes. The walk stops at the first total over the limit, so the cost is bounded
    by the limit, not by the value (a 200 MiB string costs what a 257 KiB one does).
    """
    total = 0
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            total += _str_bytes(item, limit - total) + 2
        elif isinstance(item, dict):
            total += 2 + max(2 * len(item) - 1, 0)  # braces, a colon a member, commas between
            for key, child in item.items():
                total += _str_bytes(str(key), limit - total) + 2
                if total > limit:
                    return total
                stack.append(child)
        elif isinstance(item, list):
            total += 2 + max(len(item) - 1, 0)
            stack.extend(item)
        elif item is None or item is True:
            total += 4
        elif item is False:
            total += 5
        else:
            total += len(repr(item))
        if total > limit:
            return total
    return None


def _str_bytes(text: str, room: int) -> int:
    """The bytes `text` takes inside a JSON string (escapes included, quotes not), computed
    only when it may fit in `room`: a longer one is over on characters alone, and encoding
    it would be waste."""
    if len(text) > room:
        return len(text)
    try:
        return len(orjson.dumps(text)) - 2  # at most `room` characters: bounded work
    except orjson.JSONEncodeError:  # a lone surrogate (the stdlib parser lets them through)
        return len(json.dumps(text, ensure_ascii=False).encode("utf-8", "surrogatepass")) - 2
