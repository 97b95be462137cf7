"""Long JSON strings found in a body's raw bytes, cut out of it and decoded, each a slice
at a time so no single C call holds the GIL over the whole string.

`json.loads` reads a string in one C call: a 200 MiB one held the GIL for about a second,
and the event loop's thread stood still. So before parsing, the string tokens longer than
`THRESHOLD` raw bytes are found (`long_string_spans`) and replaced by short placeholders
(`skeleton`); the small rest is parsed as before, and each long string is then decoded on
its own (`decode_span`), or refused unread where a limit would refuse it anyway.

Finding them costs a `find` or two per half-threshold window when there is none: a string
of at least `THRESHOLD` raw bytes covers a whole aligned window of half that size, and in
a window inside a string every `"` is escaped, so preceded by a backslash. Only when some
window looks like that is the body walked string by string (a Python step per string, a
`find` or a regex match a slice at a time within one) to learn exactly where each string
starts and ends.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from typing import Any

from llamon_playground.daemon.errors import BadRequest

THRESHOLD = 1 << 20  # raw bytes of a string token's content that make it "long"
SLICE = 1 << 20  # bytes one regex match, count or decode covers at once (~1 ms)
MIN_SLICE = 16  # room for a surrogate pair's two escapes (12 bytes) and progress
QUOTE, BACKSLASH = 0x22, 0x5C
# A string's content from a point outside any escape: runs of plain bytes and whole escapes.
_STRING_BODY = re.compile(rb'[^"\\]*(?:\\.[^"\\]*)*', re.DOTALL)
# The same inside a string's content (quotes there are escaped), with `\u` only when whole,
# so a match bounded by `endpos` stops before an escape the bound would cut.
_WHOLE_ESCAPES = re.compile(rb"[^\\]*(?:\\(?:u[0-9a-fA-F]{4}|[^u])[^\\]*)*", re.DOTALL)
_HIGH_SURROGATE = re.compile(rb"\\u[dD][89abAB][0-9a-fA-F]{2}")
_COLON_NEXT = re.compile(rb"[ \t\r\n]*:")
ESCAPE_BYTES = 6  # `\uXXXX`: the longest raw form of one UTF-8 byte of decoded text


def invalid(message: str) -> BadRequest:
    return BadRequest(f"request body is not valid JSON: {message}", code="invalid_json")


def long_string_spans(raw: bytes | bytearray, threshold: int = THRESHOLD,
                      step: int = SLICE) -> list[tuple[int, int]]:
    """(start, end) of the content (quotes excluded) of every string token of at least
    `threshold` raw bytes, in order; [] at the cost of a few counts when there is none.
    400 invalid_json for a string that never ends (found only while walking)."""
    if not _may_hold_long_string(raw, max(threshold // 2, 1)):
        return []
    spans = []
    pos, size = 0, len(raw)
    while pos < size:
        # Outside any string: in valid JSON the next `"` starts one.
        quote = raw.find(b'"', pos, pos + step)
        if quote < 0:
            pos += step
            continue
        end = _string_end(raw, quote + 1, max(step, MIN_SLICE))
        if end - quote - 1 >= threshold:
            spans.append((quote + 1, end))
        pos = end + 1
    return spans


def _may_hold_long_string(raw: bytes | bytearray, window: int) -> bool:
    return any(_all_quotes_escaped(raw, start, start + window)
               for start in range(0, len(raw) - window + 1, window))


def _all_quotes_escaped(raw: bytes | bytearray, start: int, end: int) -> bool:
    """Whether every `"` in raw[start:end] follows a backslash: true of any window inside a
    string. A window outside one mostly shows an unescaped quote within its first few."""
    quote = raw.find(b'"', start, end)
    for _ in range(16):
        if quote < 0:
            return True
        if quote == 0 or raw[quote - 1] != BACKSLASH:
            return False
        quote = raw.find(b'"', quote + 1, end)
    # Counted from one byte early, for a quote at `start`.
    return raw.count(b'"', start, end) == raw.count(b'\\"', max(start - 1, 0), end)


def _string_end(raw: bytes | bytearray, pos: int, step: int) -> int:
    """The index of the `"` that closes the string whose content starts at `pos`."""
    size = len(raw)
    while True:
        limit = min(pos + step, size)
        quote = raw.find(b'"', pos, limit)
        slash = raw.find(b"\\", pos, limit if quote < 0 else quote)
        if slash < 0:  # plain bytes up to the quote or the slice's end: memchr speed
            if quote >= 0:
                return quote
            if limit >= size:
                raise invalid("a string is not terminated")
            pos = limit
            continue
        stop = _STRING_BODY.match(raw, slash, limit).end()  # type: ignore[union-attr]
        if stop >= size or (stop == slash and stop + 1 >= size):
            raise invalid("a string is not terminated")
        if raw[stop] == QUOTE:  # the match consumed whole escapes: this quote is not one
            return stop
        pos = stop


def is_key(raw: bytes | bytearray, end: int) -> bool:
    """Whether the string closed by the quote at `end` is an object's key (a `:` follows,
    after any whitespace)."""
    return _COLON_NEXT.match(raw, end + 1) is not None


def skeleton(raw: bytes | bytearray, spans: list[tuple[int, int]], marker: str) -> bytes:
    """`raw` with the string token of each span replaced by `"<marker><index>"`."""
    pieces: list[bytes] = []
    previous = 0
    for index, (start, end) in enumerate(spans):
        pieces.append(bytes(raw[previous:start - 1]))
        pieces.append(json.dumps(f"{marker}{index}").encode("ascii"))
        previous = end + 1
    pieces.append(bytes(raw[previous:]))
    return b"".join(pieces)


def min_decoded_bytes(start: int, end: int) -> int:
    """A lower bound on the UTF-8 bytes the content `raw[start:end]` decodes to (also on
    its characters, where these are the fewer: then they are over any room anyway)."""
    return -(-(end - start) // ESCAPE_BYTES)


def decode_span(raw: bytes | bytearray, start: int, end: int, step: int = SLICE) -> str:
    """The text of the string whose content is `raw[start:end]`, exactly as `json.loads`
    of the whole body reads it, decoded a slice at a time. A cut never parts an escape, a
    surrogate pair written as two escapes, or a UTF-8 sequence. 400 invalid_json for what
    the whole parse would refuse (a bad escape, a control character, bad UTF-8)."""
    step = max(step, MIN_SLICE)
    pieces = []
    pos = start
    try:
        while pos < end:
            stop = _cut(raw, pos, pos + step, end)
            text = raw[pos:stop].decode("utf-8")
            pieces.append(json.loads('"' + text + '"'))
            pos = stop
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError
        raise invalid(str(exc)) from exc
    return "".join(pieces)


def _cut(raw: bytes | bytearray, pos: int, limit: int, end: int) -> int:
    if limit >= end:
        return end
    if raw.find(b"\\", pos, limit) < 0:
        stop = limit  # no escape to part: only a UTF-8 sequence might be
    else:
        stop = _WHOLE_ESCAPES.match(raw, pos, limit).end()  # type: ignore[union-attr]
    mark = stop - ESCAPE_BYTES
    if mark >= pos and _HIGH_SURROGATE.match(raw, mark, stop) and _starts_escape(raw, pos, mark):
        stop = mark  # its low half may follow: both go in the next slice
    while stop > pos and 0x80 <= raw[stop] < 0xC0:
        stop -= 1  # a UTF-8 continuation byte: the sequence goes in the next slice
    # No progress only before what cannot be read (a bad `\u`, stray continuation bytes):
    # the slice as it is then fails to decode, as the whole would.
    return stop if stop > pos else limit


def _starts_escape(raw: bytes | bytearray, pos: int, at: int) -> bool:
    """Whether the backslash at `at` starts an escape (not the second of `\\\\`), counting
    the run of backslashes back to `pos`, a point outside any escape."""
    first = at
    while first > pos and raw[first - 1] == BACKSLASH:
        first -= 1
    return (at - first) % 2 == 0


def put_back(doc: Any, marker: str, text_of: Callable[[int], str]) -> Any:
    """`doc` with each placeholder `<marker><index>` (a value or a key, at any depth)
    replaced by `text_of(index)`, in place; the root is returned, since it may be one."""
    if isinstance(doc, str):
        return text_of(int(doc[len(marker):])) if doc.startswith(marker) else doc
    stack: list[Any] = [doc]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if any(key.startswith(marker) for key in node):
                items = [(text_of(int(key[len(marker):])) if key.startswith(marker) else key,
                          value) for key, value in node.items()]
                node.clear()
                node.update(items)
            pairs: Iterable[tuple[Any, Any]] = list(node.items())
        elif isinstance(node, list):
            pairs = enumerate(node)
        else:
            continue
        for place, value in pairs:
            if isinstance(value, str):
                if value.startswith(marker):
                    node[place] = text_of(int(value[len(marker):]))
            elif isinstance(value, (dict, list)):
                stack.append(value)
    return doc


def placeholders_in(value: Any, marker: str) -> list[int]:
    """The indexes of the placeholders in `value` (keys and values, at any depth)."""
    found = []
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            if node.startswith(marker):
                found.append(int(node[len(marker):]))
        elif isinstance(node, dict):
            stack.extend(node)
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return found
