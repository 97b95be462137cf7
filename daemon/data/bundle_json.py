"""An import body parsed within bounds: refused from its bytes before parsing when its
parsed form would be too big, and parsed so the event loop keeps running meanwhile.

Parsed JSON costs far more than its text: `{}` is 2 bytes and a 64-byte dict, a short
string 3 bytes and a 50-byte object. So the number of JSON values is capped, counted from
the structure characters before anything is built: a text with V values has at most
`commas + containers + 1` of them (brackets and commas inside strings only raise the
count, never hide a value). The parse then runs in a worker thread with a Python hook per
object and number (each one a point where the interpreter lets the event loop's thread
run), instead of one C call that would hold the GIL for the whole body. The scans over
the raw bytes go a slice at a time for the same reason (each call over a 200 MB body held
the GIL for ~50 ms), and an export's bytes are dumped a piece at a time (`dump_bundle`).
"""

from __future__ import annotations

import json
import math
import re
import secrets
from collections.abc import Callable, Iterator
from typing import Any

import orjson

from llamon_playground.common.limits import DEFAULT_LIMITS, Limits
from llamon_playground.daemon.data.long_strings import (
    THRESHOLD,
    decode_span,
    long_string_spans,
    min_decoded_bytes,
    placeholders_in,
    put_back,
    skeleton,
)
from llamon_playground.daemon.data.sizes import too_large
from llamon_playground.daemon.errors import BadRequest, PayloadTooLarge

MAX_VALUES = 4_000_000  # ≈ 300 MB of parsed objects at worst
INT_MIN, INT_MAX = -(2 ** 63), 2 ** 64 - 1  # what the store writes back (orjson) exactly
# A \ud800-\udfff escape may be half a surrogate pair, which no store write could encode.
SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
ESCAPE_LENGTH = 4  # bytes a SURROGATE_ESCAPE match spans
# Bytes one C-speed scan covers at once (~0.3 ms): between two, the interpreter may hand the
# GIL to the event loop's thread.
SLICE = 1 << 20
EVENTS_SLICE = 20_000  # list items dumped by one orjson call (a few ms)


def value_bound(raw: bytes | bytearray) -> int:
    """An upper bound on the number of JSON values in `raw` (C-speed byte counts)."""
    total = 1
    for start in range(0, len(raw), SLICE):
        end = start + SLICE
        total += (raw.count(b",", start, end) + raw.count(b"{", start, end)
                  + raw.count(b"[", start, end))
    return total


def refuse_lone_surrogates(raw: bytes | bytearray, doc: Any) -> None:
    """A body escaping a lone surrogate (`"\\ud800"`) is refused as invalid JSON: the
    stdlib decoder lets one through, but orjson cannot write it back."""
    if has_surrogate_escape(raw):
        try:
            orjson.dumps(doc)
        except orjson.JSONEncodeError as exc:
            raise BadRequest(f"request body is not valid JSON: {exc}",
                             code="invalid_json") from exc


def has_surrogate_escape(raw: bytes | bytearray) -> bool:
    """Whether `raw` holds something like a \\ud800-\\udfff escape, a slice at a time;
    each window starts a match's length early, so one cut by a slice's end is still seen."""
    return any(SURROGATE_ESCAPE.search(raw, max(start - ESCAPE_LENGTH + 1, 0), start + SLICE)
               for start in range(0, len(raw), SLICE))


def dump_bundle(doc: dict[str, Any]) -> bytes:
    """`orjson.dumps(doc)` byte for byte, built from pieces that each hold the GIL briefly:
    each top-level value on its own, a long list (the events) a slice at a time, a dict
    (the blobs) an item at a time; joined once."""
    return b"".join(_bundle_pieces(doc))


def _bundle_pieces(doc: dict[str, Any]) -> Iterator[bytes]:
    yield b"{"
    for i, (key, value) in enumerate(doc.items()):
        yield (b"," if i else b"") + orjson.dumps(key) + b":"
        if isinstance(value, list) and value:
            yield b"["
            for j in range(0, len(value), EVENTS_SLICE):
                yield b"," if j else b""
                yield orjson.dumps(value[j:j + EVENTS_SLICE])[1:-1]
            yield b"]"
        elif isinstance(value, dict) and value:
            yield b"{"
            for n, (name, item) in enumerate(value.items()):
                yield (b"," if n else b"") + orjson.dumps(name) + b":"
                yield orjson.dumps(item)
            yield b"}"
        else:
            yield orjson.dumps(value)
    yield b"}"


def check_value_budget(raw: bytes | bytearray) -> None:
    """413 bundle_too_large for a bundle of more than MAX_VALUES values (an export checks
    its own bytes too: it never writes a bundle the import would refuse)."""
    if value_bound(raw) > MAX_VALUES:
        raise PayloadTooLarge(f"a bundle holds at most {MAX_VALUES:,} JSON values (counted "
                              "as commas + braces + brackets); export fewer runs",
                              code="bundle_too_large")


def parse_bundle_body(raw: bytes | bytearray, limits: Limits = DEFAULT_LIMITS,
                      threshold: int = THRESHOLD, step: int = SLICE) -> Any:
    """The JSON document (None for an empty body); 413 bundle_too_large before parsing a
    body of more than MAX_VALUES values; 400 invalid_json like any other body.

    Strings of `threshold` raw bytes or more are cut out before the parse and put back
    after it, each decoded a slice at a time (see long_strings); one in a session's or a
    run's metadata so long that even its shortest decoding is over the metadata limits is
    413 metadata_too_large unread, as the import would answer once it had read it."""
    check_value_budget(raw)
    spans = long_string_spans(raw, threshold, step)
    marker = f"\x00{secrets.token_hex(16)}:"
    decoded: dict[int, str] = {}

    def text_of(index: int) -> str:
        if index not in decoded:
            decoded[index] = decode_span(raw, *spans[index], step)
        return decoded[index]

    try:
        text = (skeleton(raw, spans, marker) if spans else raw).decode("utf-8")
        if not text.strip():
            return None
        doc = (loads_putting_keys_back(text, marker, text_of) if spans
               else _strict_loads(text, _object))
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, UnicodeDecodeError
        raise BadRequest(f"request body is not valid JSON: {exc}", code="invalid_json") from exc
    del text
    if spans:
        refuse_long_metadata(bundle_of(doc), spans, marker, limits)
        # Every one read, even one a repeated key dropped: the whole parse would refuse it
        # if it is not valid.
        for index in range(len(spans)):
            text_of(index)
        doc = put_back(doc, marker, text_of)
    refuse_lone_surrogates(raw, doc)
    return doc


def refuse_long_metadata(bundle: Any, spans: list[tuple[int, int]], marker: str,
                         limits: Limits) -> None:
    """413 metadata_too_large, as `check_metadata` words it, for a session's or a run's
    input metadata whose long strings alone are over its limit at their shortest decoding
    (whole first, then one top-level value); anything less certain is decoded and checked
    by the import's own validation."""
    for where, metadata in _metadata_places(bundle):
        def least(value: Any) -> int:
            return sum(min_decoded_bytes(*spans[i]) + 2 for i in placeholders_in(value, marker))
        if least(metadata) > limits.metadata_bytes:
            raise too_large(where, limits.metadata_bytes, "metadata_bytes", "metadata_too_large")
        for key, value in metadata.items():
            if least(value) > limits.metadata_value_bytes:
                raise too_large(f"{where}[{str(key)[:64]!r}]", limits.metadata_value_bytes,
                                "metadata_value_bytes", "metadata_too_large")


def _metadata_places(bundle: Any) -> Iterator[tuple[str, dict[str, Any]]]:
    if not isinstance(bundle, dict):
        return
    for key, path in (("sessions", ()), ("runs", ("input",))):
        items = bundle.get(key)
        for index, item in enumerate(items if isinstance(items, list) else []):
            node = item
            for field in path:
                node = node.get(field) if isinstance(node, dict) else None
            metadata = node.get("metadata") if isinstance(node, dict) else None
            if isinstance(metadata, dict):
                where = ".".join((f"{key}[{index}]", *path, "metadata"))
                yield where, metadata


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # A Python function on purpose: its bytecode is where another thread may take the GIL.
    return dict(pairs)


def loads_putting_keys_back(text: str, marker: str, text_of: Callable[[int], str]) -> Any:
    """`text` parsed (ValueError or RecursionError for what is not JSON: a NaN, an integer
    beyond 64 bits), each placeholder key `<marker><index>` replaced by `text_of(index)` as
    its object is made: a repeated key then keeps its last value in the document's order
    (`{"é": 1, "\\u00e9": 2}` is `{"é": 2}`), which a placeholder put back afterwards
    could not tell. Placeholder values are left for `put_back`."""
    def made(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        return dict((text_of(int(key[len(marker):])) if key.startswith(marker) else key, value)
                    for key, value in pairs)
    return _strict_loads(text, made)


def _strict_loads(text: str, make_object: Callable[[list[tuple[str, Any]]], dict[str, Any]]
                  ) -> Any:
    return json.loads(text, object_pairs_hook=make_object, parse_int=_int, parse_float=_float,
                      parse_constant=_constant)


def _int(text: str) -> int:
    value = int(text)  # over 4,300 digits: ValueError, so invalid_json
    if not INT_MIN <= value <= INT_MAX:
        raise ValueError(f"integer beyond 64 bits: {text[:30]}")
    return value


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number out of range: {text[:30]}")
    return value


def _constant(text: str) -> Any:
    raise ValueError(f"{text} is not JSON")


# -- what a bundle request selects, and what a bundle holds ---------------------------------

def parse_selection(body: Any) -> tuple[list[str] | None, list[str] | None]:
    """`{session_ids?, run_ids?}`; neither given (or an empty body) selects all history."""
    if body is None:
        return None, None
    if not isinstance(body, dict):
        raise BadRequest("the request body must be a JSON object", code="invalid_request")
    unknown = set(body) - {"session_ids", "run_ids"}
    if unknown:
        raise BadRequest(f"unknown field(s): {', '.join(sorted(unknown))}", code="unknown_field")
    picked: list[list[str] | None] = []
    for key in ("session_ids", "run_ids"):
        value = body.get(key)
        if value is not None and (not isinstance(value, list) or not all(
                isinstance(v, str) for v in value)):
            raise BadRequest(f"`{key}` must be a list of ids", code="invalid_request")
        picked.append(value)
    return picked[0], picked[1]


def bundle_of(body: Any) -> Any:
    """`{"bundle": <bundle>}` or the bundle itself: the import accepts both."""
    if isinstance(body, dict) and set(body) == {"bundle"}:
        return body["bundle"]
    return body


def file_parts(run: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The parts of a run's input and output whose content is a blob: local files, and the
    long texts history keeps as blobs (both export their blob)."""
    for part in [*(run.get("input") or {}).get("parts", []), *(run.get("output") or [])]:
        if isinstance(part, dict) and part.get("kind") in ("file", "text") \
                and part.get("sha256"):
            yield part
