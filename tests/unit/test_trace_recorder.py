"""The live side of trace export (daemon/tracing/recorder.py): what a commit's rows leave
behind for a run's trace, and the hand-over at its terminal status."""

from __future__ import annotations

from typing import Any

import orjson

from llamon_playground.daemon.store.frames import build_frame
from llamon_playground.daemon.store.records import EventRow
from llamon_playground.daemon.tracing.recorder import MAX_RUN_EVENTS, TraceRecorder
from llamon_playground.daemon.tracing.spans import TEXT_CAP, StoredEvent

TS = "2026-12-04T13:00:00.000Z"


def rows(run_id: str, events: list[tuple[str, dict[str, Any]]], first: int = 1
         ) -> list[EventRow]:
    return [(first + i, run_id, kind, TS, build_frame(first + i, run_id, kind,
                                                      orjson.dumps(payload)))
            for i, (kind, payload) in enumerate(events)]


class Ended:
    def __init__(self) -> None:
        self.runs: list[tuple[str, list[StoredEvent], int]] = []
        self.suites: list[str] = []


def recorder() -> tuple[TraceRecorder, Ended]:
    ended = Ended()
    return TraceRecorder(lambda r, e, n: ended.runs.append((r, e, n)),
                         ended.suites.append), ended


def test_a_run_hands_over_its_phases_traces_and_statuses_at_its_end_and_no_deltas() -> None:
    rec, ended = recorder()
    rec.committed(rows("run_a", [
        ("run.status", {"status": "queued"}),
        ("run.phase", {"phase": "send", "state": "started"}),
        ("output.delta", {"text": "hello", "append": True}),
        ("trace", {"type": "node.start", "node": "n", "ts": 1.5, "payload": {"big": "x"}}),
        ("trace", {"type": "evaluation.result", "evaluator": "e", "score": 1,
                   "reason": "r" * (TEXT_CAP * 3)})]))
    assert ended.runs == [] and rec.following == 1
    rec.committed(rows("run_a", [("run.status", {"status": "completed"})], first=10))
    (run_id, events, left_out), = ended.runs
    assert run_id == "run_a" and left_out == 0 and rec.following == 0
    assert [e.kind for e in events] == ["run.status", "run.phase", "trace", "trace",
                                        "run.status"]
    # Only what a span reads of each event.
    assert events[2].data == {"type": "node.start", "node": "n", "ts": 1.5}
    assert len(events[3].data["reason"]) == TEXT_CAP


def test_a_run_keeps_at_most_its_cap_and_counts_the_rest_but_always_its_end() -> None:
    rec, ended = recorder()
    many = [("trace", {"type": "node.start", "node": f"n{i}"})
            for i in range(MAX_RUN_EVENTS + 5)]
    rec.committed(rows("run_b", many))
    rec.committed(rows("run_b", [("run.status", {"status": "failed"})], first=99_999))
    (_, events, left_out), = ended.runs
    assert len(events) == MAX_RUN_EVENTS + 1 and left_out == 5
    assert events[-1].data["status"] == "failed"


def test_a_suite_runs_end_is_handed_over_by_its_id() -> None:
    rec, ended = recorder()
    rec.committed(rows("sr_1", [("suite.status", {"status": "running"}),
                                ("suite.status", {"status": "completed"})]))
    assert ended.suites == ["sr_1"] and ended.runs == []
