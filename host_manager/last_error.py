"""Why the Host died, read from its own last words: the last traceback in its output, with the
exception line first and the Playground's own frames left out.

A generation forked from the warm parent runs the project's entry point through
`preloader.py` and `runpy`: every traceback of a Host that dies at import opens with those
frames, which say nothing about the project. They are dropped (and counted), so what a
person reads first is the exception, then the project's frames that raised it. The full
output stays in the Host log (GET /host/logs).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from llamon_playground.host_manager.state import HostState

if TYPE_CHECKING:
    from llamon_playground.host_manager.logs import HostLogs

FAILED = frozenset({HostState.BACKOFF, HostState.CRASHLOOP})
SCAN_LINES = 400  # of the failed generation's output read for its traceback
TRACEBACK = "Traceback (most recent call last):"
MAX_LINES = 40  # of the trimmed traceback kept (its end: the frames nearest the raise)
MAX_LINE_CHARS = 500
_STREAM = re.compile(r"^\[(?:stdout|stderr)\] ")
_FRAME = re.compile(r'^  File "([^"]+)", line \d+')
# Frames of the Playground's own start-up: the warm parent and runpy, which runs the entry.
_OWN = re.compile(r"(/host_manager/spawn/[^/]+\.py|<frozen runpy>|/runpy\.py)$")


def _text(line: str) -> str:
    return _STREAM.sub("", line, count=1)[:MAX_LINE_CHARS]


def _own_frame(text: str) -> bool:
    """A `File` line of the Playground's own start-up (preloader, runpy)."""
    match = _FRAME.match(text)
    return match is not None and _OWN.search(match.group(1)) is not None


def _last_block(lines: list[str]) -> list[str] | None:
    """The last traceback in `lines` (its header to its exception line), or None."""
    start = next((i for i in range(len(lines) - 1, -1, -1) if lines[i] == TRACEBACK), None)
    if start is None:
        return None
    block = [lines[start]]
    for line in lines[start + 1:]:
        block.append(line)
        # The exception line is the first one after the header not indented.
        if line and not line.startswith(" "):
            break
    return block


def _frames(body: list[str]) -> list[list[str]]:
    """A traceback's body split into frames (a `File` line and the lines under it)."""
    frames: list[list[str]] = []
    for line in body:
        if _FRAME.match(line) or not frames:
            frames.append([line])
        else:
            frames[-1].append(line)
    return frames


def last_error(lines: list[str]) -> dict[str, Any] | None:
    """The last traceback in a Host's output (`[stream] text` lines or bare text):
    `exception` (its last line, e.g. `RuntimeError: boom`), `traceback` (header, the
    project's frames, exception line; at most MAX_LINES) and `frames_left_out` (the
    Playground's preloader and runpy frames dropped). None when there is no traceback."""
    block = _last_block([_text(line) for line in lines])
    if block is None:
        return None
    exception = block[-1] if len(block) > 1 and not block[-1].startswith(" ") else ""
    body = block[1:-1] if exception else block[1:]
    kept: list[str] = []
    left_out = 0
    for frame in _frames(body):
        if _own_frame(frame[0]):
            left_out += 1
        else:
            kept.extend(frame)
    trimmed = [TRACEBACK, *kept, *([exception] if exception else [])]
    if len(trimmed) > MAX_LINES:
        trimmed = [TRACEBACK, *trimmed[-(MAX_LINES - 1):]]
    return {"exception": exception or "(the traceback was cut off)", "traceback": trimmed,
            "frames_left_out": left_out}


def trimmed_tail(lines: list[str]) -> list[str]:
    """A failed run's log tail to read top down: when it holds a traceback, its exception
    line first, then the tail with the Playground's own frames left out (a line says how
    many). Without a traceback, the tail as it was."""
    found = last_error(lines)
    if found is None or not found["frames_left_out"]:
        return [found["exception"], *lines] if found else list(lines)
    out: list[str] = [found["exception"]]
    skipping = False
    for line in lines:
        text = _text(line)
        if _own_frame(text):
            skipping = True
            continue
        if skipping and text.startswith("    "):
            continue  # the dropped frame's source line (and its ^^^ marks)
        skipping = False
        out.append(line)
    out.append(f"({found['frames_left_out']} frames of the Playground's preloader and runpy "
               "left out; the whole output is in the Host logs)")
    return out


def host_last_error(logs: HostLogs, state: HostState, generation: int | None
                    ) -> dict[str, Any] | None:
    """GET /host's `last_error`: while the Host is backing off or in a crashloop, why its
    latest generation died (`last_error` of that generation's output, and its number)."""
    if state not in FAILED or generation is None:
        return None
    found = last_error(logs.tail(SCAN_LINES, generation))
    return {**found, "generation": generation} if found else None
