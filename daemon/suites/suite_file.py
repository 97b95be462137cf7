"""A suite as a reviewable file: the bytes written, and the suite read back from them.

The format (docs/suites.md, "Suites as files"): JSON, keys sorted, two-space indent, so each
case is one block and a changed baseline is a small `git diff`. A text of several lines is
a list of its lines (one a line of the file); a file input is named by its sha256 and its
bytes sit beside, in `files/<sha256>`. A baseline holds only what the report compares:
status, reason, the output and the scores — never a run id, a timestamp or a duration,
which would change on every save.

Pure: no I/O here. A file that does not parse, or says something a suite cannot hold,
raises `SuiteFileError` with the line it is on.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from llamon_playground.common.wire.suites import MAX_SUITE_REPEAT as MAX_REPEAT

FORMAT = "llamon-playground-suite/1"
TOP_KEYS = ("cases", "format", "name", "repeat", "run_on_save")
CASE_KEYS = ("baseline", "kind", "turns")
TURN_KEYS = ("metadata", "parts", "resume", "revision")
KINDS = ("run", "chain", "session")
# What a part or a score keeps in a file: what Compare reads, nothing a run stamps on it.
PART_KEYS = ("kind", "text", "data", "sha256", "name", "mime_type", "size", "url")
SCORE_KEYS = ("evaluator", "name", "scope", "node", "score", "passStatus")
BASELINE_KEYS = ("status", "reason", "output", "scores", "repetitions")
SHA256 = re.compile(r"^[0-9a-f]{64}$")


class SuiteFileError(Exception):
    """A suite file that cannot be read: says the line (1-based) and what is wrong."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(f"line {line}: {message}")
        self.line = line
        self.message = message


@dataclass
class FileSuite:
    """A suite as its file says it: turns and baselines in the daemon's own shapes."""

    name: str
    run_on_save: bool
    repeat: int
    cases: list[dict[str, Any]]  # {"kind", "turns": [{"input", "resume"}], "baseline"}

    def file_shas(self) -> set[str]:
        """The blobs its inputs name."""
        return {p["sha256"] for c in self.cases for t in c["turns"]
                for p in t["input"]["parts"] if p.get("kind") == "file" and p.get("sha256")}


# -- writing ------------------------------------------------------------------------------

def _text_out(text: str) -> str | list[str]:
    return text.split("\n") if "\n" in text else text


def _part_out(part: Any) -> Any:
    if not isinstance(part, dict):
        return part
    doc = {k: part[k] for k in PART_KEYS if k in part}
    if isinstance(doc.get("text"), str):
        doc["text"] = _text_out(doc["text"])
    return doc


def _score_out(score: Any) -> Any:
    return {k: score[k] for k in SCORE_KEYS if k in score} if isinstance(score, dict) else score


def baseline_out(baseline: dict[str, Any]) -> dict[str, Any]:
    """A baseline as a file keeps it: status, reason, output, scores (and its repetitions'
    when it holds several)."""
    doc = {"output": [_part_out(p) for p in baseline.get("output") or []],
           "reason": baseline.get("reason"),
           "scores": [_score_out(s) for s in baseline.get("scores") or []],
           "status": baseline.get("status")}
    if len(baseline.get("repetitions") or []) > 1:
        doc["repetitions"] = [baseline_out({**r, "repetitions": None})
                              for r in baseline["repetitions"]]
    return doc


def _turn_out(turn: dict[str, Any]) -> dict[str, Any]:
    request = turn["input"]
    doc: dict[str, Any] = {"metadata": request.get("metadata") or {},
                           "parts": [_part_out(p) for p in request.get("parts") or []],
                           "resume": bool(turn.get("resume"))}
    if request.get("revision"):
        doc["revision"] = request["revision"]
    return doc


def dump(name: str, run_on_save: bool, repeat: int, cases: list[dict[str, Any]]) -> bytes:
    """The file's bytes: the same suite always gives the same bytes."""
    doc = {"cases": [{"baseline": baseline_out(c["baseline"]), "kind": c["kind"],
                      "turns": [_turn_out(t) for t in c["turns"]]} for c in cases],
           "format": FORMAT, "name": name, "repeat": repeat, "run_on_save": run_on_save}
    return (json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()


# -- reading ------------------------------------------------------------------------------

def _line(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def _case_lines(text: str) -> list[int]:
    """The line each element of the top-level `cases` list starts on."""
    match = re.search(r'"cases"\s*:\s*\[', text)
    if match is None:
        return []
    decoder = json.JSONDecoder()
    lines: list[int] = []
    i = match.end()
    while True:
        while i < len(text) and text[i] in " \t\r\n,":
            i += 1
        if i >= len(text) or text[i] == "]":
            return lines
        lines.append(_line(text, i))
        try:
            _, i = decoder.raw_decode(text, i)
        except ValueError:
            return lines


def _key_line(text: str, key: str) -> int:
    match = re.search(rf'"{re.escape(key)}"\s*:', text)
    return _line(text, match.start()) if match else 1


def _text_in(value: Any, line: int, where: str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "\n".join(value)
    raise SuiteFileError(line, f"{where}: `text` is a string or a list of lines")


def _part_in(part: Any, line: int, where: str) -> dict[str, Any]:
    if not isinstance(part, dict) or not isinstance(part.get("kind"), str):
        raise SuiteFileError(line, f"{where}: a part is an object with a `kind`")
    doc = dict(part)
    if "text" in doc:
        doc["text"] = _text_in(doc["text"], line, where)
    if doc["kind"] == "file" and "sha256" in doc and not (
            isinstance(doc["sha256"], str) and SHA256.match(doc["sha256"])):
        raise SuiteFileError(line, f"{where}: `sha256` is 64 lowercase hex digits")
    return doc


def _object(value: Any, keys: tuple[str, ...], line: int, where: str,
            required: tuple[str, ...] = ()) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise SuiteFileError(line, f"{where} must be an object")
    unknown = sorted(set(value) - set(keys))
    if unknown:
        raise SuiteFileError(line, f"{where}: unknown key(s) {', '.join(unknown)}; "
                                   f"allowed: {', '.join(keys)}")
    missing = [k for k in required if k not in value]
    if missing:
        raise SuiteFileError(line, f"{where}: missing {', '.join(missing)}")
    return value


def _turn_in(raw: Any, line: int, where: str) -> dict[str, Any]:
    doc = _object(raw, TURN_KEYS, line, where, ("parts",))
    parts = doc["parts"]
    if not isinstance(parts, list) or not parts:
        raise SuiteFileError(line, f"{where}: `parts` is a non-empty list")
    metadata = doc.get("metadata", {})
    if not isinstance(metadata, dict):
        raise SuiteFileError(line, f"{where}: `metadata` is an object")
    request: dict[str, Any] = {"parts": [_part_in(p, line, where) for p in parts],
                               "metadata": metadata}
    if doc.get("revision"):
        request["revision"] = doc["revision"]
    return {"input": request, "resume": bool(doc.get("resume", False))}


def _baseline_in(raw: Any, line: int, where: str, nested: bool = False) -> dict[str, Any]:
    doc = _object(raw, BASELINE_KEYS[:-1] if nested else BASELINE_KEYS, line, where)
    output, scores = doc.get("output") or [], doc.get("scores") or []
    if not isinstance(output, list) or not isinstance(scores, list):
        raise SuiteFileError(line, f"{where}: `output` and `scores` are lists")
    baseline: dict[str, Any] = {
        "status": doc.get("status"), "reason": doc.get("reason"),
        "output": [_part_in(p, line, where) for p in output],
        "scores": scores, "run_ids": [], "run_id": None, "duration_ms": None,
        "code_fingerprint": None, "source": "file", "suite_run_id": None}
    reps = doc.get("repetitions")
    if reps is not None:
        if not isinstance(reps, list) or len(reps) < 2:
            raise SuiteFileError(line, f"{where}: `repetitions` lists two or more results")
        baseline["repetitions"] = [_baseline_in(r, line, f"{where}.repetitions[{i}]", True)
                                   for i, r in enumerate(reps)]
    return baseline


def parse(data: bytes, max_cases: int, max_name: int) -> FileSuite:
    """The suite a file holds; SuiteFileError (with its line) when it holds none."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SuiteFileError(_line(data[:exc.start].decode("utf-8", "replace"), exc.start),
                             "not UTF-8 text") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SuiteFileError(exc.lineno, f"not JSON: {exc.msg} (column {exc.colno})") from None
    _object(doc, TOP_KEYS, 1, "the file", ("cases", "format", "name"))
    if doc["format"] != FORMAT:
        raise SuiteFileError(_key_line(text, "format"), f"`format` must be {FORMAT!r}")
    name = doc["name"]
    if not isinstance(name, str) or not name.strip() or len(name) > max_name:
        raise SuiteFileError(_key_line(text, "name"),
                             f"`name` is a non-blank string of at most {max_name} characters")
    repeat = doc.get("repeat", 1)
    if not isinstance(repeat, int) or isinstance(repeat, bool) or not 1 <= repeat <= MAX_REPEAT:
        raise SuiteFileError(_key_line(text, "repeat"),
                             f"`repeat` is a whole number from 1 to {MAX_REPEAT}")
    run_on_save = doc.get("run_on_save", False)
    if not isinstance(run_on_save, bool):
        raise SuiteFileError(_key_line(text, "run_on_save"), "`run_on_save` is true or false")
    cases = doc["cases"]
    if not isinstance(cases, list) or not cases or len(cases) > max_cases:
        raise SuiteFileError(_key_line(text, "cases"),
                             f"`cases` is a list of 1 to {max_cases} cases")
    lines = _case_lines(text)
    parsed = []
    for index, raw in enumerate(cases):
        line = lines[index] if index < len(lines) else _key_line(text, "cases")
        where = f"cases[{index}]"
        case = _object(raw, CASE_KEYS, line, where, CASE_KEYS)
        if case["kind"] not in KINDS:
            raise SuiteFileError(line, f"{where}: `kind` is one of {', '.join(KINDS)}")
        turns = case["turns"]
        if not isinstance(turns, list) or not turns:
            raise SuiteFileError(line, f"{where}: `turns` is a non-empty list")
        parsed.append({"kind": case["kind"],
                       "turns": [_turn_in(t, line, f"{where}.turns[{i}]")
                                 for i, t in enumerate(turns)],
                       "baseline": _baseline_in(case["baseline"], line, f"{where}.baseline"),
                       "line": line})
    return FileSuite(name, run_on_save, repeat, parsed)
