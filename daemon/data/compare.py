"""Structural comparison of two runs (the answer's shape: docs/api.md, "Compare").

Pure functions over run documents (as `history.run_to_dict` builds them). The answer holds
status and duration of each side, the output text in full plus a unified diff, DataPart
changes by JSON Pointer, FilePart metadata and hashes, one row per evaluator, and
`automatic_verdict: null`: v1 defines no automatic pass/fail policy.

Diff work is capped so that two 1 MB texts answer well within a second: common leading and
trailing lines are skipped, and at most MAX_DIFF_LINES changed lines per side are diffed;
the answer says so (`truncated`) when it stopped early. The answer is bounded too: a side's
text longer than MAX_TEXT_CHARS is given (and diffed) up to there only, and `cut` says so
with both full lengths, so two 256 MiB outputs answer a few MB, not 512.
"""

from __future__ import annotations

import difflib
import re
from typing import Any

import orjson

from llamon_playground.daemon.data.json_diff import json_changes

MAX_DIFF_LINES = 3000
MAX_TEXT_CHARS = 1_000_000  # of each side's text in the answer
DIFF_CONTEXT = 3
MAX_DATA_CHANGES = 2000
FILE_FIELDS = ("name", "mime", "size", "sha256", "uri", "availability")

_HUNK = re.compile(r"^@@ -(\d+)((?:,\d+)?) \+(\d+)((?:,\d+)?) @@")


def compare_runs(left: dict[str, Any], right: dict[str, Any]) -> dict[str, Any]:
    """The comparison of two runs as `GET /compare` answers it: summaries, the duration delta,
    the output and input diffs, the score table."""
    left_ms, right_ms = left.get("duration_ms"), right.get("duration_ms")
    answer: dict[str, Any] = {
        "left": _summary(left),
        "right": _summary(right),
        "duration_delta_ms": _delta(left_ms, right_ms),
        "same_code": _same_code(left, right),
    }
    answer.update(compare_parts(left.get("output") or [], right.get("output") or []))
    answer["scores"] = score_rows(left.get("scores") or [], right.get("scores") or [])
    answer["input"] = compare_parts((left.get("input") or {}).get("parts") or [],
                                    (right.get("input") or {}).get("parts") or [])
    answer["automatic_verdict"] = None
    return answer


def _summary(run: dict[str, Any]) -> dict[str, Any]:
    error = run.get("error")
    return {"run_id": run["id"], "session_id": run.get("session_id"),
            "status": run.get("status"), "reason": run.get("reason"),
            "duration_ms": run.get("duration_ms"), "created_at": run.get("created_at"),
            "error": error.get("message") if isinstance(error, dict) else None,
            "label": run.get("label"), "note": run.get("note"),
            "rerun_of": run.get("rerun_of"), "edited_fields": run.get("edited_fields") or [],
            "generation": run.get("generation"), "code_fingerprint": run.get("code_fingerprint")}


def _same_code(left: dict[str, Any], right: dict[str, Any]) -> bool | None:
    """Whether both ran against the same watched files; null when a side never reached a
    Host (or ran before fingerprints were kept)."""
    a, b = left.get("code_fingerprint"), right.get("code_fingerprint")
    return None if not a or not b else a == b


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _delta(left: Any, right: Any) -> float | None:
    """right - left when both are numbers; a missing side is null, never zero."""
    if not (_is_number(left) and _is_number(right)):
        return None
    return round(float(right) - float(left), 9)


def compare_parts(left: list[dict[str, Any]], right: list[dict[str, Any]]) -> dict[str, Any]:
    def of_kind(parts: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
        return [p for p in parts if isinstance(p, dict) and p.get("kind") == kind]

    left_text = "\n".join(str(p.get("text", "")) for p in of_kind(left, "text"))
    right_text = "\n".join(str(p.get("text", "")) for p in of_kind(right, "text"))
    return {"text": text_diff(left_text, right_text),
            "data": data_diff([p.get("data") for p in of_kind(left, "data")],
                              [p.get("data") for p in of_kind(right, "data")]),
            "files": file_rows(of_kind(left, "file"), of_kind(right, "file"))}


# -- text -------------------------------------------------------------------------------------

def text_diff(left: str, right: str) -> dict[str, Any]:
    """Both texts (in full up to MAX_TEXT_CHARS), and a unified diff of the changed region
    (capped)."""
    doc: dict[str, Any] = {"left": left, "right": right, "same": left == right,
                           "unified_diff": "", "truncated": False}
    if len(left) > MAX_TEXT_CHARS or len(right) > MAX_TEXT_CHARS:
        doc["cut"] = {"left_chars": len(left), "right_chars": len(right),
                      "kept_chars": MAX_TEXT_CHARS}
        doc["truncated"] = True
        doc["note"] = (f"the texts are {len(left)} and {len(right)} characters long; the "
                       f"answer and the diff cover the first {MAX_TEXT_CHARS} of each")
        left, right = left[:MAX_TEXT_CHARS], right[:MAX_TEXT_CHARS]
        doc["left"], doc["right"] = left, right
    if doc["same"]:
        return doc
    a, b = left.splitlines(), right.splitlines()
    # Skip what both share at the ends: a small edit in a large text costs almost nothing.
    head = 0
    while head < min(len(a), len(b)) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < min(len(a), len(b)) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    a_end, b_end = len(a) - tail, len(b) - tail
    if a_end - head > MAX_DIFF_LINES or b_end - head > MAX_DIFF_LINES:
        a_end = min(a_end, head + MAX_DIFF_LINES)
        b_end = min(b_end, head + MAX_DIFF_LINES)
        doc["truncated"] = True
        doc["note"] = ((doc["note"] + "; ") if "note" in doc else "") + (
            f"the changed region is longer than {MAX_DIFF_LINES} lines; the diff "
            f"covers lines {head + 1}-{a_end} (left) and {head + 1}-{b_end} (right) only")
    start = max(0, head - DIFF_CONTEXT)
    lines = difflib.unified_diff(
        a[start:min(len(a), a_end + DIFF_CONTEXT)], b[start:min(len(b), b_end + DIFF_CONTEXT)],
        fromfile="left", tofile="right", n=DIFF_CONTEXT, lineterm="")
    doc["unified_diff"] = "\n".join(_shift_hunk(line, start) for line in lines) + "\n"
    return doc


def _shift_hunk(line: str, offset: int) -> str:
    """difflib numbers lines from the window it saw; renumber them from the whole text."""
    match = _HUNK.match(line) if offset else None
    if match is None:
        return line
    return (f"@@ -{int(match[1]) + offset}{match[2]} +{int(match[3]) + offset}{match[4]} @@"
            + line[match.end():])


# -- data -------------------------------------------------------------------------------------

def data_diff(left: list[Any], right: list[Any]) -> dict[str, Any]:
    """DataParts paired by position; `part` is the index among each side's data parts."""
    changes: list[dict[str, Any]] = []
    truncated = False
    for index in range(max(len(left), len(right))):
        budget = MAX_DATA_CHANGES - len(changes)
        if index >= len(left):
            found, cut = [{"path": "", "op": "add", "left": None, "right": right[index]}], False
        elif index >= len(right):
            found, cut = [{"path": "", "op": "remove", "left": left[index], "right": None}], False
        else:
            found, cut = json_changes(left[index], right[index], budget)
        changes.extend({"part": index, **change} for change in found[:budget])
        if cut or len(found) > budget:
            truncated = True
            break
    return {"changes": changes, "truncated": truncated}


# -- files ------------------------------------------------------------------------------------

def file_rows(left: list[dict[str, Any]], right: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """FileParts paired by position: metadata side by side, what changed, same content?"""
    rows = []
    for index in range(max(len(left), len(right))):
        a = _file_view(left[index]) if index < len(left) else None
        b = _file_view(right[index]) if index < len(right) else None
        changed = list(FILE_FIELDS) if a is None or b is None else [
            f for f in FILE_FIELDS if a[f] != b[f]]
        rows.append({"index": index, "left": a, "right": b, "changed": changed,
                     "same_content": _same_content(a, b)})
    return rows


def _file_view(part: dict[str, Any]) -> dict[str, Any]:
    return {f: part.get(f) for f in FILE_FIELDS}


def _same_content(a: dict[str, Any] | None, b: dict[str, Any] | None) -> bool | None:
    """Equal sha256 → true; a side missing or two different local blobs → false; a URI is
    never downloaded, so its content is unknown → null."""
    if a is None or b is None:
        return False
    if a["sha256"] and b["sha256"]:
        return bool(a["sha256"] == b["sha256"])
    return None


# -- scores -----------------------------------------------------------------------------------

def score_rows(left: list[Any], right: list[Any]) -> list[dict[str, Any]]:
    """One row per evaluator (and scope/node, when the evaluator reported them).

    The scores list only grows; when an evaluator reported twice, the later entry counts.
    """
    sides = (latest_scores(left), latest_scores(right))
    keys = [*sides[0], *(k for k in sides[1] if k not in sides[0])]
    rows = []
    for key in keys:
        a, b = sides[0].get(key), sides[1].get(key)
        left_score = a.get("score") if a else None
        right_score = b.get("score") if b else None
        rows.append({"evaluator": key[0], "scope": key[1], "node": key[2],
                     "left": left_score, "right": right_score,
                     "delta": _delta(left_score, right_score),
                     "left_pass_status": a.get("passStatus") if a else None,
                     "right_pass_status": b.get("passStatus") if b else None})
    return rows


def _hashable(value: Any) -> Any:
    return orjson.dumps(value).decode() if isinstance(value, dict | list) else value


def latest_scores(scores: list[Any]) -> dict[tuple[Any, ...], dict[str, Any]]:
    """Each evaluator's latest entry in `scores` (by evaluator, scope and node; later entries
    win)."""
    latest: dict[tuple[Any, ...], dict[str, Any]] = {}
    for entry in scores:
        if not isinstance(entry, dict):
            continue
        name = entry.get("evaluator", entry.get("name"))
        key = tuple(_hashable(v) for v in (name, entry.get("scope"), entry.get("node")))
        latest[key] = entry
    return latest
