"""Captures from the Host: trace events and evaluator results for the run it is answering.

Accepted only with the Ready generation's capture token (`401 capture_refused`: missing,
wrong, or an old generation's) and only for the active run of that generation (`409
capture_not_active`); every event is checked before any is written (a refused request
writes nothing), counted against the run's limit, timed, and an `evaluation.result` becomes
one of the run's scores (docs/host.md, "Capture: the trust boundary").
"""

from __future__ import annotations

import math
import time
from typing import Any

from llamon_playground.common.limits import Limits
from llamon_playground.daemon.data.sizes import check_capture_event
from llamon_playground.daemon.errors import ApiError, BadRequest, Conflict
from llamon_playground.daemon.runs.manager import RunManager
from llamon_playground.daemon.store.database import Store
from llamon_playground.daemon.store.history import scores_op
from llamon_playground.host_manager.capture import token_matches
from llamon_playground.host_manager.supervisor import HostSupervisor

MAX_EVENTS = 1000
RESERVED_FIELDS = ("seq", "run_id", "kind")
SCORE_OPTIONAL = ("reason", "passStatus", "scope", "node", "duration_ms")
# What a score entry never copies from its event: the event's own framing, and the name and
# score it holds under fixed keys. Every other key is kept as it came (a newer runtime's).
SCORE_FRAMING = frozenset({"type", "ts", "evaluator", "name", "score", *RESERVED_FIELDS})


class CaptureRefused(ApiError):
    """The capture token is missing, wrong, or belongs to a Host generation that is gone."""

    status = 401
    code = "capture_refused"


class RunCaptureCount:
    """How many capture events the active run has stored (the per-run limit's count)."""

    def __init__(self) -> None:
        self.run_id: str | None = None
        self.count = 0

    def of(self, run_id: str) -> int:
        """The count so far for `run_id` (a new run starts from 0)."""
        if run_id != self.run_id:
            self.run_id, self.count = run_id, 0
        return self.count


def score_entry(event: dict[str, Any]) -> dict[str, Any]:
    """A stored score: `evaluator` and `score` always; the known optional keys
    (SCORE_OPTIONAL) and any other key only when the runtime sent them, as sent."""
    name = event.get("evaluator", event.get("name"))
    score = event.get("score")
    if not isinstance(name, str) or not name:
        raise BadRequest("evaluation.result needs an `evaluator` name", code="invalid_capture")
    if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score):
        raise BadRequest("evaluation.result needs a numeric `score`", code="invalid_capture")
    entry: dict[str, Any] = {"evaluator": name, "score": score}
    entry.update({k: v for k, v in event.items() if k not in SCORE_FRAMING})
    return entry


def is_time(value: object) -> bool:
    """A `ts` the Host sent: Unix epoch seconds, a finite number."""
    return (not isinstance(value, bool) and isinstance(value, (int, float))
            and math.isfinite(value) and value >= 0)


class CaptureService:
    """Takes trace events and scores from the current Host generation for its active run."""

    def __init__(self, store: Store, host: HostSupervisor, runs: RunManager,
                 limits: Limits) -> None:
        self._store = store
        self._host = host
        self._runs = runs
        self._limits = limits
        self._count = RunCaptureCount()

    def admit(self, token: str | None) -> None:
        """401 unless `token` is the Ready generation's (checked before the body is read)."""
        if not token_matches(self._host.capture_token, token):
            raise CaptureRefused("capture token missing, wrong or from an old Host generation")

    async def accept(self, body: Any) -> int:
        """Store one request's events (`{"run_id", "events": [...]}`) for the active run of
        the current generation, all or none; how many were stored."""
        if not isinstance(body, dict) or not isinstance(body.get("events"), list):
            raise BadRequest("expected {\"run_id\": ..., \"events\": [...]}",
                             code="invalid_capture")
        run_id, events = body.get("run_id"), body["events"]
        if len(events) > MAX_EVENTS:
            raise BadRequest(f"at most {MAX_EVENTS} events per request", code="invalid_capture")
        active = self._runs.active
        gen = self._host.generation
        if (active is None or active.run_id != run_id or gen is None
                or active.generation != gen.number):
            raise Conflict("captures are accepted only for the active run of this Host "
                           "generation", code="capture_not_active")
        payloads, scores = self._checked(active.run_id, events)
        self._count.count += len(payloads)  # before any await: a concurrent post counts
        await self._store.open()
        for payload in payloads:
            self._store.append_event(active.run_id, "trace", payload)
        if scores:
            # Queued after the trace events, retried with them while history is degraded.
            self._store.submit(scores_op(active.run_id, scores))
        return len(payloads)

    def _checked(self, run_id: str, events: list[Any]
                 ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """Every event checked and timed, and the scores among them; the whole request is
        refused when one event is."""
        received = round(time.time(), 6)
        stored = self._count.of(run_id)
        payloads: list[dict[str, Any]] = []
        scores: list[dict[str, Any]] = []
        for event in events:
            if not isinstance(event, dict) or not isinstance(event.get("type"), str):
                raise BadRequest("each event needs a string `type`", code="invalid_capture")
            check_capture_event(event, stored + len(payloads) + 1, f"events[{len(payloads)}]",
                                self._limits)
            payload = {k: v for k, v in event.items() if k not in RESERVED_FIELDS}
            if not is_time(payload.get("ts")):
                # The page draws the trace as a timeline: every event gets its time, the
                # Host's own when it sent one (it may batch events), else when it arrived.
                payload["ts"] = received
            payloads.append(payload)
            if event["type"] == "evaluation.result":
                scores.append(score_entry(event))
        return payloads, scores
