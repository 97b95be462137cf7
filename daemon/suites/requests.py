"""What a suite's create and patch bodies may say. Validation only; nothing is written here."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from llamon_playground.common.wire.suites import MAX_SUITE_CASES as MAX_CASES
from llamon_playground.common.wire.suites import MAX_SUITE_NAME as MAX_NAME
from llamon_playground.common.wire.suites import MAX_SUITE_REPEAT
from llamon_playground.daemon.errors import BadRequest

CREATE_KEYS = ("name", "cases", "run_on_save")
PATCH_KEYS = ("name", "run_on_save", "baseline_suite_run_id")
CASE_KEYS = ("run_id", "session_id", "kind")
RUN_KINDS = ("run", "chain")
START_KEYS = ("repeat",)
SAVE_KEYS = ("path",)


@dataclass(frozen=True)
class CaseSpec:
    """One case as asked: a run (its input, or its resume chain) or a whole session."""

    run_id: str | None
    session_id: str | None
    kind: str | None  # "run" or "chain" for a run; None: chosen from the run's lineage


@dataclass(frozen=True)
class SuiteCreate:
    """A checked `POST /suites` body."""

    name: str
    cases: list[CaseSpec]
    run_on_save: bool


def _object(body: Any, allowed: tuple[str, ...], where: str = "the request body") -> dict[str, Any]:
    if not isinstance(body, dict):
        raise BadRequest(f"{where} must be a JSON object", code="invalid_request")
    unknown = set(body) - set(allowed)
    if unknown:
        raise BadRequest(f"unknown field(s) in {where}: {', '.join(sorted(unknown))}; "
                         f"allowed: {', '.join(allowed)}", code="unknown_field")
    return body


def parse_name(value: Any) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_NAME:
        raise BadRequest(f"`name` must be a non-blank string of at most {MAX_NAME} characters",
                         code="invalid_name", limit=MAX_NAME)
    return value


def _flag(value: Any, key: str) -> bool:
    if not isinstance(value, bool):
        raise BadRequest(f"`{key}` must be true or false", code=f"invalid_{key}")
    return value


def _case(raw: Any, index: int) -> CaseSpec:
    where = f"cases[{index}]"
    doc = _object(raw, CASE_KEYS, where)
    run_id, session_id, kind = doc.get("run_id"), doc.get("session_id"), doc.get("kind")
    if (run_id is None) == (session_id is None):
        raise BadRequest(f"{where} names exactly one of `run_id` and `session_id`",
                         code="invalid_case", index=index)
    for value, key in ((run_id, "run_id"), (session_id, "session_id")):
        if value is not None and (not isinstance(value, str) or not value):
            raise BadRequest(f"{where}.{key} must be a non-empty string", code="invalid_case",
                             index=index)
    if kind is not None and (run_id is None or kind not in RUN_KINDS):
        raise BadRequest(f"{where}.kind is `run` or `chain`, and only with `run_id`",
                         code="invalid_case", index=index)
    return CaseSpec(run_id, session_id, kind)


def parse_create(body: Any) -> SuiteCreate:
    doc = _object(body, CREATE_KEYS)
    if "name" not in doc:
        raise BadRequest("a suite needs a `name`", code="invalid_name", limit=MAX_NAME)
    name = parse_name(doc["name"])
    cases = doc.get("cases")
    if not isinstance(cases, list) or not cases:
        raise BadRequest("`cases` must be a non-empty list", code="empty_suite")
    if len(cases) > MAX_CASES:
        raise BadRequest(f"a suite holds at most {MAX_CASES} cases", code="too_many_cases",
                         limit=MAX_CASES)
    return SuiteCreate(name, [_case(c, i) for i, c in enumerate(cases)],
                       _flag(doc.get("run_on_save", False), "run_on_save"))


def parse_patch(body: Any) -> dict[str, Any]:
    """The fields given: `name`, `run_on_save`, `baseline_suite_run_id` (make that suite
    run's results the cases' baselines)."""
    doc = _object(body, PATCH_KEYS)
    fields: dict[str, Any] = {}
    if "name" in doc:
        fields["name"] = parse_name(doc["name"])
    if "run_on_save" in doc:
        fields["run_on_save"] = _flag(doc["run_on_save"], "run_on_save")
    if "baseline_suite_run_id" in doc:
        value = doc["baseline_suite_run_id"]
        if not isinstance(value, str) or not value:
            raise BadRequest("`baseline_suite_run_id` must be a suite run's id",
                             code="invalid_baseline")
        fields["baseline_suite_run_id"] = value
    return fields


def parse_start(body: Any) -> dict[str, Any]:
    """`POST /suites/{id}/runs`: no body, or `{"repeat": N}` (each case N times)."""
    if body is None:
        return {}
    doc = _object(body, START_KEYS)
    fields: dict[str, Any] = {}
    if "repeat" in doc:
        value = doc["repeat"]
        # JSON has one number type: 3.0 is the whole number 3 (as JSON Schema's integer).
        whole = isinstance(value, int) or (isinstance(value, float) and value.is_integer())
        if not whole or isinstance(value, bool) or not 1 <= value <= MAX_SUITE_REPEAT:
            raise BadRequest(f"`repeat` must be a whole number from 1 to {MAX_SUITE_REPEAT}",
                             code="invalid_repeat", limit=MAX_SUITE_REPEAT)
        fields["repeat"] = int(value)
    return fields


def parse_save(body: Any) -> dict[str, Any]:
    """`POST /suites/{id}/file`: no body, or `{"path"}` (a .json file under
    playground/suites/)."""
    if body is None:
        return {}
    doc = _object(body, SAVE_KEYS)
    if "path" in doc and (not isinstance(doc["path"], str) or not doc["path"]):
        raise BadRequest("`path` must be a path under playground/suites/",
                         code="invalid_suite_path")
    return dict(doc)
