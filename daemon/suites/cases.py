"""A case as a suite keeps it: its turns (each a stored input, copied) and its baseline (the
result it is compared with), read from history when the suite is made.

Three kinds: `run` (one stored input, cloned as Rerun clones it), `chain` (a run and the
answers that resumed it, turn by turn) and `session` (a session's turns in order, in one new
context). A case's result over several turns: the status and reason of its last turn, the
durations summed, every turn's output and scores in order (for one evaluator, the later
turn's score counts), the last turn's code fingerprint.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from llamon_playground.daemon.errors import BadRequest
from llamon_playground.daemon.store.database import Store
from llamon_playground.daemon.store.history import get_run, get_session, run_to_dict
from llamon_playground.daemon.suites.requests import CaseSpec

MAX_TURNS = 1000
RESULT_KEYS = ("status", "reason", "duration_ms", "output", "scores", "code_fingerprint")


@dataclass
class Case:
    """A case ready to store: what it replays and what it is compared with."""

    kind: str
    source_run_id: str | None
    source_session_id: str | None
    turns: list[dict[str, Any]]  # {"input": {parts, metadata, revision?}, "resume": bool}
    baseline: dict[str, Any]
    file_shas: set[str] = field(default_factory=set)


def turn_of(run: dict[str, Any]) -> dict[str, Any]:
    """A run's input as a turn replays it: parts (files by hash), metadata, revision."""
    stored = run["input"] or {}
    request: dict[str, Any] = {"parts": stored.get("parts") or [],
                               "metadata": stored.get("metadata") or {}}
    if stored.get("revision"):
        request["revision"] = stored["revision"]
    return {"input": request, "resume": bool(run.get("parent_run_id"))}


def result_of(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """What a case's turns came to (see the module's docstring)."""
    if not runs:
        return {"run_ids": [], "run_id": None, "status": None, "reason": None,
                "duration_ms": None, "output": [], "scores": [], "code_fingerprint": None}
    last = runs[-1]
    durations = [r.get("duration_ms") for r in runs]
    return {"run_ids": [r["id"] for r in runs], "run_id": last["id"],
            "status": last.get("status"), "reason": last.get("reason"),
            "duration_ms": (round(sum(d for d in durations if d is not None), 3)
                            if all(d is not None for d in durations) else None),
            "output": [p for r in runs for p in (r.get("output") or [])],
            "scores": [s for r in runs for s in (r.get("scores") or [])],
            "code_fingerprint": last.get("code_fingerprint")}


def _shas(turns: list[dict[str, Any]]) -> set[str]:
    return {p["sha256"] for t in turns for p in t["input"]["parts"]
            if isinstance(p, dict) and p.get("kind") == "file" and p.get("sha256")}


async def _run(store: Store, run_id: str, index: int) -> dict[str, Any]:
    run = await get_run(store, run_id)
    if run is None:
        raise BadRequest(f"cases[{index}]: no run {run_id}", code="unknown_run", index=index,
                         run_id=run_id)
    return run


async def _chain(store: Store, run: dict[str, Any], index: int) -> list[dict[str, Any]]:
    """The resume chain a run is part of: its first turn, then each answer."""
    while run.get("parent_run_id"):
        run = await _run(store, run["parent_run_id"], index)
    chain = [run]
    while chain[-1].get("resumed_by") and len(chain) < MAX_TURNS:
        chain.append(await _run(store, chain[-1]["resumed_by"], index))
    return chain


async def _session_turns(store: Store, session_id: str, index: int) -> list[dict[str, Any]]:
    """The session's conversation: its runs in its own context, in order (reruns and other
    suite runs went to contexts of their own)."""
    session = await get_session(store, session_id)
    if session is None:
        raise BadRequest(f"cases[{index}]: no session {session_id}", code="unknown_session",
                         index=index, session_id=session_id)
    rows = await store.fetch_all(
        "SELECT * FROM runs WHERE session_id = ? AND context_id = ? ORDER BY rowid LIMIT ?",
        (session_id, session["context_id"], MAX_TURNS + 1))
    if not rows:
        raise BadRequest(f"cases[{index}]: session {session_id} has no turns",
                         code="empty_session", index=index, session_id=session_id)
    if len(rows) > MAX_TURNS:
        raise BadRequest(f"cases[{index}]: a case holds at most {MAX_TURNS} turns",
                         code="too_many_turns", index=index, limit=MAX_TURNS)
    return [run_to_dict(r) for r in rows]


async def build_case(store: Store, spec: CaseSpec, index: int) -> Case:
    """The case a spec names, its input and baseline copied (400 for an unknown id)."""
    if spec.session_id is not None:
        runs = await _session_turns(store, spec.session_id, index)
        kind, source_run = "session", None
    else:
        assert spec.run_id is not None
        run = await _run(store, spec.run_id, index)
        in_chain = bool(run.get("parent_run_id") or run.get("resumed_by"))
        kind = spec.kind or ("chain" if in_chain else "run")
        runs = await _chain(store, run, index) if kind == "chain" else [run]
        source_run = spec.run_id
    turns = [turn_of(r) for r in runs]
    if kind == "run":
        turns[0]["resume"] = False  # a run's input alone replays as a new run
    baseline = {**result_of(runs), "source": "history", "suite_run_id": None}
    return Case(kind, source_run, spec.session_id, turns, baseline, _shas(turns))
