"""A run's trace and span ids, derived from its ids.

Known at the run's start, before any span exists: the A2A request carries a W3C
`traceparent` naming the run's `invoke_agent` span, so a Host instrumented with
OpenTelemetry puts its spans under it; the span exported at the run's end takes that id.
A suite run's runs share the suite run's trace (its span is their parent). Deriving them
makes a back-filled run land on the same ids as its live export did.
"""

from __future__ import annotations

import hashlib

SAMPLED = "01"


def _digest(*parts: str) -> bytes:
    return hashlib.sha256("\x1f".join(("llamon.playground", *parts)).encode()).digest()


def trace_id(run_id: str, suite_run_id: str | None = None) -> int:
    """The trace a run's spans are in: its suite run's when it has one, else its own."""
    value = int.from_bytes(_digest("trace", suite_run_id or run_id)[:16], "big")
    return value or 1  # all zeros is the invalid id


def span_id(*key: str) -> int:
    """A span's id from what names it (a run id, a phase's name and index, ...)."""
    value = int.from_bytes(_digest("span", *key)[:8], "big")
    return value or 1


def run_span_id(run_id: str) -> int:
    """The id of a run's `invoke_agent` span."""
    return span_id(run_id)


def suite_span_id(suite_run_id: str) -> int:
    """The id of a suite run's span, the parent of its runs' spans."""
    return span_id("suite", suite_run_id)


def traceparent(run_id: str, suite_run_id: str | None = None) -> str:
    """The W3C `traceparent` of a run's A2A request: its trace, its `invoke_agent` span,
    sampled (the sampler decides at export; a Host's spans are dropped with it)."""
    return f"00-{trace_id(run_id, suite_run_id):032x}-{run_span_id(run_id):016x}-{SAMPLED}"
