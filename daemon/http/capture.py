"""The capture endpoint: trace events and evaluator results from the Host.

Served only on the daemon's Unix socket (the front relays /api/playground/v1/* and
/health, nothing else). Accepted only with the current generation's token and only for the
active run of that generation.
"""

from __future__ import annotations

import math
import time
from typing import Any

from aiohttp import web

from llamon_playground.common.http_json import json_response
from llamon_playground.daemon.data.sizes import check_capture_event
from llamon_playground.daemon.errors import ApiError, BadRequest, Conflict
from llamon_playground.daemon.http.util import read_json
from llamon_playground.daemon.services import SERVICES
from llamon_playground.daemon.store.history import scores_op
from llamon_playground.host_manager.capture import CAPTURE_PATH, token_matches

MAX_CAPTURE_BYTES = 1024 * 1024
MAX_EVENTS = 1000
RESERVED_FIELDS = ("seq", "run_id", "kind")
SCORE_OPTIONAL = ("reason", "passStatus", "scope", "node", "duration_ms")


class RunCaptureCount:
    """How many capture events the active run has stored (the per-run limit's count)."""

    def __init__(self) -> None:
        self.run_id: str | None = None
        self.count = 0

    def of(self, run_id: str) -> int:
        if run_id != self.run_id:
            self.run_id, self.count = run_id, 0
        return self.count


CAPTURE_COUNT = web.AppKey("capture_count", RunCaptureCount)


class CaptureRefused(ApiError):
    status = 401
    code = "capture_refused"


def score_entry(event: dict[str, Any]) -> dict[str, Any]:
    """A stored score: `score` always, the optional keys only when the runtime sent them."""
    name = event.get("evaluator", event.get("name"))
    score = event.get("score")
    if not isinstance(name, str) or not name:
        raise BadRequest("evaluation.result needs an `evaluator` name", code="invalid_capture")
    if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score):
        raise BadRequest("evaluation.result needs a numeric `score`", code="invalid_capture")
    entry: dict[str, Any] = {"evaluator": name, "score": score}
    entry.update({k: event[k] for k in SCORE_OPTIONAL if k in event})
    return entry


def is_time(value: object) -> bool:
    """A `ts` the Host sent: Unix epoch seconds, a finite number."""
    return (not isinstance(value, bool) and isinstance(value, (int, float))
            and math.isfinite(value) and value >= 0)


async def capture(request: web.Request) -> web.Response:
    s = request.app[SERVICES]
    header = request.headers.get("Authorization", "")
    given = header[7:] if header.startswith("Bearer ") else None
    if not token_matches(s.host.capture_token, given):
        raise CaptureRefused("capture token missing, wrong or from an old Host generation")
    body = await read_json(request, MAX_CAPTURE_BYTES)
    if not isinstance(body, dict) or not isinstance(body.get("events"), list):
        raise BadRequest("expected {\"run_id\": ..., \"events\": [...]}", code="invalid_capture")
    run_id, events = body.get("run_id"), body["events"]
    if len(events) > MAX_EVENTS:
        raise BadRequest(f"at most {MAX_EVENTS} events per request", code="invalid_capture")
    active = s.runs.active
    gen = s.host.generation
    if (active is None or active.run_id != run_id or gen is None
            or active.generation != gen.number):
        raise Conflict("captures are accepted only for the active run of this Host generation",
                       code="capture_not_active")
    received = round(time.time(), 6)
    counter = request.app[CAPTURE_COUNT]
    stored = counter.of(run_id)
    limits = s.settings.limits
    payloads: list[dict[str, Any]] = []
    scores: list[dict[str, Any]] = []
    for event in events:
        if not isinstance(event, dict) or not isinstance(event.get("type"), str):
            raise BadRequest("each event needs a string `type`", code="invalid_capture")
        # The whole request is refused when one event is: nothing of it is written.
        check_capture_event(event, stored + len(payloads) + 1, f"events[{len(payloads)}]",
                            limits)
        payload = {k: v for k, v in event.items() if k not in RESERVED_FIELDS}
        if not is_time(payload.get("ts")):
            # The page draws the trace as a timeline: every event gets its time, the Host's
            # own when it sent one (it may batch events), else the time it arrived here.
            payload["ts"] = received
        payloads.append(payload)
        if event["type"] == "evaluation.result":
            scores.append(score_entry(event))
    counter.count = stored + len(payloads)  # before any await: a concurrent post counts on
    await s.store.open()
    for payload in payloads:
        s.store.append_event(run_id, "trace", payload)
    if scores:
        # Queued after the trace events, retried with them while history is degraded.
        s.store.submit(scores_op(run_id, scores))
    return json_response({"accepted": len(payloads)})


def add_capture_routes(app: web.Application) -> None:
    app[CAPTURE_COUNT] = RunCaptureCount()
    app.router.add_post(CAPTURE_PATH, capture)
