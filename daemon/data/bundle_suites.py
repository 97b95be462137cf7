"""A bundle's `suites`: each suite with its cases, their copied inputs and baselines.

Pure: the export shapes the documents, the import checks them all before anything is
written (ids, names, kinds, every turn's parts, the blobs their files name) and maps the
run ids a baseline names to the ids the import gives (a run the bundle does not hold keeps
its old id, and the baseline shows it as deleted). Suite runs and their reports are not
carried: they are the receiving side's to make.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from llamon_playground.common.limits import Limits
from llamon_playground.common.wire.suites import MAX_SUITE_CASES as MAX_CASES
from llamon_playground.common.wire.suites import MAX_SUITE_NAME as MAX_NAME
from llamon_playground.daemon.data.json_depth import check_depth
from llamon_playground.daemon.data.redact import redact_metadata
from llamon_playground.daemon.data.sizes import check_metadata
from llamon_playground.daemon.errors import BadRequest

SUITE_KEYS = {"id", "name", "created_at", "run_on_save", "cases"}
CASE_KEYS = {"id", "position", "kind", "source_run_id", "source_session_id", "turns",
             "baseline"}
KINDS = {"run", "chain", "session"}
MAX_TURNS = 1000
PartCheck = Callable[[Any, str, dict[str, int]], str | None]


def suite_doc(suite: dict[str, Any], cases: list[dict[str, Any]]) -> dict[str, Any]:
    """One suite as a bundle carries it (turn metadata redacted again on the way out)."""
    docs = []
    for case in cases:
        turns = orjson.loads(case["turns"])
        for turn in turns:
            turn["input"]["metadata"] = redact_metadata(turn["input"].get("metadata") or {})
        docs.append({"id": case["id"], "position": case["position"], "kind": case["kind"],
                     "source_run_id": case["source_run_id"],
                     "source_session_id": case["source_session_id"], "turns": turns,
                     "baseline": orjson.loads(case["baseline"])})
    return {"id": suite["id"], "name": suite["name"], "created_at": suite["created_at"],
            "run_on_save": bool(suite["run_on_save"]), "cases": docs}


def case_file_shas(case: dict[str, Any]) -> set[str]:
    """The sha256 of every file part in a suite case's turns."""
    return {p["sha256"] for t in case["turns"] for p in t["input"]["parts"]
            if isinstance(p, dict) and p.get("kind") == "file" and p.get("sha256")}


def _bad(message: str, where: str) -> BadRequest:
    return BadRequest(f"{where}: {message}", code="invalid_bundle", where=where)


def _keys(obj: Any, allowed: set[str], where: str) -> dict[str, Any]:
    if not isinstance(obj, dict):
        raise _bad("must be an object", where)
    unknown = set(obj) - allowed
    if unknown:
        raise _bad(f"unknown field(s) {', '.join(sorted(unknown))}", where)
    return obj


def _id(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value or len(value) > MAX_NAME:
        raise _bad("`id` must be a string of 1 to 200 characters", where)
    return value


def _turn(turn: Any, where: str, blob_sizes: dict[str, int], check_part: PartCheck,
          limits: Limits) -> set[str]:
    doc = _keys(turn, {"input", "resume"}, where)
    request = _keys(doc.get("input"), {"parts", "metadata", "revision"}, f"{where}.input")
    parts = request.get("parts")
    if not isinstance(parts, list) or not parts:
        raise _bad("`parts` must be a non-empty list", f"{where}.input")
    if not isinstance(request.get("metadata", {}), dict) or \
            not isinstance(request.get("revision", ""), str) or \
            not isinstance(doc.get("resume"), bool):
        raise _bad("`metadata` is an object, `revision` a string, `resume` a boolean", where)
    check_metadata(request.get("metadata", {}), f"{where}.input.metadata", limits)
    shas = {sha for i, part in enumerate(parts)
            if (sha := check_part(part, f"{where}.input.parts[{i}]", blob_sizes))}
    return shas


def check_suites(value: Any, blob_sizes: dict[str, int], check_part: PartCheck,
                 limits: Limits) -> tuple[list[dict[str, Any]], set[str]]:
    """The bundle's suites, checked in full (turn metadata under the API's `limits`); the
    blobs their turns name."""
    if not isinstance(value, list):
        raise _bad("must be a list", "suites")
    seen: set[str] = set()
    names: set[str] = set()
    referenced: set[str] = set()
    for i, raw in enumerate(value):
        where = f"suites[{i}]"
        suite = _keys(raw, SUITE_KEYS, where)
        suite_id = _id(suite.get("id"), where)
        name = suite.get("name")
        if suite_id in seen or not isinstance(name, str) or not name.strip() or \
                len(name) > MAX_NAME or name in names:
            raise _bad("a unique `id` and a unique, non-blank `name` of at most 200 "
                       "characters", where)
        seen.add(suite_id)
        names.add(name)
        if not isinstance(suite.get("run_on_save", False), bool):
            raise _bad("`run_on_save` must be a boolean", where)
        cases = suite.get("cases")
        if not isinstance(cases, list) or not cases or len(cases) > MAX_CASES:
            raise _bad(f"`cases` must hold 1 to {MAX_CASES} cases", where)
        for n, case in enumerate(cases):
            at = f"{where}.cases[{n}]"
            doc = _keys(case, CASE_KEYS, at)
            _id(doc.get("id"), at)
            turns = doc.get("turns")
            if doc.get("kind") not in KINDS or not isinstance(turns, list) or not turns \
                    or len(turns) > MAX_TURNS or not isinstance(doc.get("baseline"), dict):
                raise _bad("a `kind` (run, chain, session), 1 to 1000 `turns` and a "
                           "`baseline` object", at)
            check_depth(doc["baseline"], f"{at}.baseline")
            for t, turn in enumerate(turns):
                check_depth(turn, f"{at}.turns[{t}]")
                referenced |= _turn(turn, f"{at}.turns[{t}]", blob_sizes, check_part,
                                    limits)
    return value, referenced


def remap_baseline(baseline: dict[str, Any], run_ids: dict[str, str]) -> dict[str, Any]:
    """The baseline naming the imported runs by their new ids (others keep theirs)."""
    out = dict(baseline)
    ids = out.get("run_ids")
    if isinstance(ids, list):
        out["run_ids"] = [run_ids.get(i, i) if isinstance(i, str) else i for i in ids]
    if isinstance(out.get("run_id"), str):
        out["run_id"] = run_ids.get(out["run_id"], out["run_id"])
    out["suite_run_id"] = None  # suite runs are not carried
    return out
