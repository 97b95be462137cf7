"""The few events a trace needs, kept per live run from what history commits.

Fed the rows of each commit (the same rows the live fan-out gets): a stream's deltas are
passed over by their kind alone; a phase, a trace event or a status is kept in a slim form
(the fields a span uses, long texts cut). A run's terminal `run.status` hands its events
over, so exporting a finished run never reads its history back. A run keeps at most
MAX_RUN_EVENTS of them (a Host may send ten thousand captures a run); past that the rest
are counted, not kept.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import orjson

from llamon_playground.common.contract import TERMINAL_STATUSES
from llamon_playground.daemon.store.frames import frame_data
from llamon_playground.daemon.store.records import EventRow
from llamon_playground.daemon.tracing.spans import TEXT_CAP, StoredEvent, parse_time

log = logging.getLogger(__name__)

KEPT_KINDS = frozenset({"run.phase", "trace", "run.status", "suite.status"})
TERMINAL = frozenset(status.value for status in TERMINAL_STATUSES)
MAX_RUN_EVENTS = 2000
MAX_RUNS = 16  # runs followed at once (one is active; a few more only after a crash's gap)
# What a span reads of each event; anything else the Host sent is left behind.
FIELDS = frozenset({"phase", "state", "generation", "task_state", "status", "reason",
                    "message", "revision", "detail", "file", "line", "type", "node", "ts",
                    "evaluator", "name", "score", "passStatus", "scope", "error"})

RunEnded = Callable[[str, list[StoredEvent], int], None]


def slim_event(kind: str, ts: str, frame: bytes) -> StoredEvent:
    """A committed event as a trace keeps it: its fields a span reads, long texts cut."""
    doc: dict[str, Any] = orjson.loads(frame_data(frame))
    data = {}
    for key, value in doc.items():
        if key not in FIELDS:
            continue
        if isinstance(value, str) and len(value) > TEXT_CAP:
            data[key] = value[:TEXT_CAP]
        elif isinstance(value, (dict, list)):
            data[key] = orjson.dumps(value)[:TEXT_CAP].decode(errors="ignore")
        else:
            data[key] = value
    return StoredEvent(kind, parse_time(ts) or 0, data)


class TraceRecorder:
    """Keeps each live run's trace events; calls `on_run_end(run_id, events, left_out)` on
    its terminal status and `on_suite_end(suite_run_id)` on a suite run's."""

    def __init__(self, on_run_end: RunEnded, on_suite_end: Callable[[str], None]) -> None:
        self._on_run_end = on_run_end
        self._on_suite_end = on_suite_end
        self._runs: dict[str, list[StoredEvent]] = {}
        self._left_out: dict[str, int] = {}

    def committed(self, rows: list[EventRow]) -> None:
        """One commit's rows (called on the loop right after it; cheap for deltas)."""
        for row in rows:
            if row[2] in KEPT_KINDS:
                try:
                    self._take(row)
                except Exception:  # a listener never stops its owner
                    log.exception("trace recorder: event %s skipped", row[0])

    def _take(self, row: EventRow) -> None:
        _, run_id, kind, ts, frame = row
        event = slim_event(kind, ts, frame)
        if kind == "suite.status":
            if event.data.get("status") in TERMINAL:
                self._on_suite_end(run_id)
            return
        events = self._runs.get(run_id)
        if events is None:
            if len(self._runs) >= MAX_RUNS:  # the oldest never ended (history lost it)
                oldest = next(iter(self._runs))
                del self._runs[oldest]
                self._left_out.pop(oldest, None)
            events = self._runs[run_id] = []
        if len(events) < MAX_RUN_EVENTS or kind == "run.status":
            events.append(event)
        else:
            self._left_out[run_id] = self._left_out.get(run_id, 0) + 1
        if kind == "run.status" and event.data.get("status") in TERMINAL:
            del self._runs[run_id]
            self._on_run_end(run_id, events, self._left_out.pop(run_id, 0))

    @property
    def following(self) -> int:
        return len(self._runs)
