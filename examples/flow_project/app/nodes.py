"""The Flow's node functions: plain functions from a dict to a dict."""

from __future__ import annotations

import time
from typing import Any

AUTO_APPROVE_LIMIT = 1000
# A request tagged "slow" makes `approve` take this long: a node that runs for a while, to
# watch the graph light it while it runs.
SLOW_TAG = "slow"
SLOW_SECONDS = 4.0


def approve(data: dict[str, Any]) -> dict[str, Any]:
    """Approve small amounts at once; larger ones wait for a reviewer."""
    if SLOW_TAG in (data.get("tags") or []):
        time.sleep(SLOW_SECONDS)
    amount = float(data.get("amount") or 0)
    decision = "approved" if amount <= AUTO_APPROVE_LIMIT else "needs_review"
    return {"schema": "approval.result.v1", "requestId": data.get("requestId", ""),
            "decision": decision, "amount": amount, "tags": list(data.get("tags") or [])}


def escalate(data: dict[str, Any]) -> dict[str, Any]:
    """Route a request to the escalation level it asks for."""
    level = int(data.get("level") or 1)
    return {"schema": "approval.result.v1", "requestId": data.get("requestId", ""),
            "decision": "escalated", "level": level, "reason": data.get("reason", "")}


def notify(result: dict[str, Any]) -> dict[str, Any]:
    """Last step of every path: mark the result as sent to the requester."""
    return {**result, "notified": True}
