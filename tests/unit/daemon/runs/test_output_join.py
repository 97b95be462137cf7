"""A long run's streamed text is joined once, not copied again for every chunk: the
collector's stored output (at the run's end) and boot recovery's fold of the deltas
(after a crash). Both used to add each chunk to the text so far, which for 50,000 chunks
held the daemon's loop for 0.7 s at the run's end.

`Pieces` is a str whose `+` fails: only code that joins the pieces once gets through."""

from __future__ import annotations

from typing import Any

from llamon_playground.daemon.a2a.wire import A2AEvent, WirePart
from llamon_playground.daemon.runs.output import OutputCollector
from llamon_playground.daemon.runs.reconcile import DeltaFold


class Pieces(str):
    def __add__(self, other: object) -> str:
        raise AssertionError("text added chunk by chunk")

    def __radd__(self, other: object) -> str:
        raise AssertionError("text added chunk by chunk")


def chunk(text: str, artifact: str = "a", append: bool = True) -> A2AEvent:
    return A2AEvent("artifact", parts=[WirePart("text", text=Pieces(text), mime="text/plain")],
                    artifact_id=artifact, append=append)


def test_the_stored_output_joins_each_run_of_text_once() -> None:
    collected = OutputCollector()
    collected.add(chunk("one ", append=False))
    for word in ("two ", "three ", "four"):
        collected.add(chunk(word))
    collected.add(A2AEvent("artifact", parts=[WirePart("data", data={"n": 1})],
                           artifact_id="a", append=True))
    collected.add(chunk("five"))
    collected.add(chunk("alone", artifact="b", append=False))
    parts = collected.wire_parts()
    assert [(p.kind, p.text, p.data) for p in parts] == [
        ("text", "one two three four", None), ("data", None, {"n": 1}),
        ("text", "five", None), ("text", "alone", None)]
    assert all(p.mime == "text/plain" for p in parts if p.kind == "text")  # kept when joined


def test_recovery_folds_the_deltas_without_adding_them_up() -> None:
    fold = DeltaFold()
    deltas: list[dict[str, Any]] = [
        {"artifact_id": "a", "text": Pieces("one "), "append": False},
        *({"artifact_id": "a", "text": Pieces(f"w{i} ")} for i in range(1000)),
        {"artifact_id": "b", "text": Pieces("gone"), "append": False},
        {"artifact_id": "b", "text": Pieces("kept"), "append": False},  # replaces
    ]
    for delta in deltas:
        fold.add(delta)
    assert fold.texts["a"].text() == "one " + "".join(f"w{i} " for i in range(1000))
    assert fold.texts["b"].text() == "kept"
