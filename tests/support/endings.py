"""What every ended run must satisfy, checked on its events: each phase that started
closes once, and the streamed deltas fold into the stored output."""

from __future__ import annotations

from typing import Any

from llamon_playground.daemon.runs.reconcile import DeltaFold

CLOSING = ("completed", "failed", "skipped", "cancelled", "interrupted")


def assert_phases_close(phases: list[dict[str, Any]]) -> None:
    """Every phase with a started event has exactly one closing event after it."""
    for name in {e["phase"] for e in phases if e["state"] == "started"}:
        states = [e["state"] for e in phases if e["phase"] == name]
        assert states[0] == "started" and len(states) == 2, (name, states)
        assert states[1] in CLOSING, (name, states)


def folded_text(deltas: list[dict[str, Any]]) -> str:
    """What a client shows after applying the output.delta events in order."""
    fold = DeltaFold()
    for delta in deltas:
        fold.add(delta)
    return fold.text()


def stored_text(output: list[dict[str, Any]]) -> str:
    """The text of a stored output (the error part a failure adds is not streamed)."""
    return "".join(p["text"] for p in output if p.get("kind") == "text")
