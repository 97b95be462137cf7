"""A bundle-sized document is held with the cyclic collector off, and let go in slices."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from llamon_playground.daemon.data.big_documents import collector_paused, dismantle


class Item:
    """A weakly referenceable object standing for one parsed value."""


@pytest.fixture
def collector_on() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


@pytest.mark.usefixtures("collector_on")
def test_the_collector_is_off_until_the_last_holder_leaves() -> None:
    with collector_paused():
        assert not gc.isenabled()
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer holder is still inside
    assert gc.isenabled()


def test_a_collector_someone_else_turned_off_stays_off() -> None:
    was = gc.isenabled()
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()
    finally:
        if was:
            gc.enable()


@pytest.mark.usefixtures("collector_on")
def test_an_error_lets_go_of_what_the_frames_it_left_held() -> None:
    refs: list[weakref.ref[Item]] = []

    def build_and_fail() -> None:
        document = Item()
        refs.append(weakref.ref(document))
        raise ValueError("invalid bundle")

    with pytest.raises(ValueError) as caught, collector_paused():
        build_and_fail()
    # The traceback is still alive here; the frame it names no longer holds the document.
    assert caught.value.__traceback__ is not None
    assert refs[0]() is None
    assert gc.isenabled()


@dataclass
class Plan:
    rows: list[Item] = field(default_factory=list)
    ids: dict[str, Item] = field(default_factory=dict)


def test_dismantle_empties_lists_and_leaves_dicts_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("llamon_playground.daemon.data.big_documents.SLICE", 3)
    kept = Item()
    plan = Plan([Item() for _ in range(10)], {"a": kept})
    doc: dict[str, Any] = {"events": [Item() for _ in range(7)], "blobs": {"x": Item()},
                           "format": "f"}
    loose = [Item() for _ in range(5)]
    refs = [weakref.ref(item) for item in (*plan.rows, *doc["events"], *loose)]
    dismantle(plan, doc, loose, None, "text")
    assert plan.rows == [] and doc["events"] == [] and loose == []
    assert all(ref() is None for ref in refs)
    assert plan.ids == {"a": kept} and list(doc["blobs"]) == ["x"] and doc["format"] == "f"
