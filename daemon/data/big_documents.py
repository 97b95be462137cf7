"""A bundle-sized document held and let go without stalling the event loop.

An import or an export holds millions of parsed objects for a few seconds, and two things
about so many objects hold the GIL for long stretches, whichever thread causes them, so
the event loop (every stream, every request) stood still meanwhile:

- Python's cyclic collector scans every tracked object in a full collection, and starts one
  each time the count of objects grows by a quarter: while a 200 MB bundle was built, half a
  dozen of 40 ms to 0.6 s ran. Nothing in such a document is a reference cycle, so they
  freed nothing. `collector_paused` keeps automatic collection off from the moment such a
  request starts until the last one in flight ends, by when its document is gone.
- Dropping the last reference to the document frees it all in one C call (the parsed
  bundle, its validated form and the import's rows: ~140 ms at once, on the loop's thread).
  `dismantle`, run in a worker thread, empties its long lists a slice at a time first.

Both are used from the event loop's thread only (the handlers), so the count needs no lock.
"""

from __future__ import annotations

import dataclasses
import gc
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

SLICE = 20_000  # list items freed at once (a few ms with the GIL held)

_holders = 0
_turned_off = False  # the collector was on when the first holder came, and we turned it off


@contextmanager
def collector_paused() -> Iterator[None]:
    """Automatic collection off while any holder is inside. An error that ends a holder
    clears the locals of the frames it left: a traceback that kept them would keep the
    document alive until a collection, and that collection would scan it."""
    global _holders, _turned_off  # noqa: PLW0603 (one process-wide switch, as gc's own)
    if _holders == 0 and gc.isenabled():
        gc.disable()
        _turned_off = True
    _holders += 1
    try:
        yield
    except BaseException as exc:
        traceback.clear_frames(exc.__traceback__)
        raise
    finally:
        _holders -= 1
        if _holders == 0 and _turned_off:
            _turned_off = False
            gc.enable()


def dismantle(*documents: Any) -> None:
    """Empty the lists of `documents` (a list, a dict's values, a dataclass's fields) a
    slice at a time, so what only they held is freed in small steps. Dicts are left whole:
    an answer may still hold one (an import's ID maps)."""
    for document in documents:
        for items in _lists_of(document):
            while items:
                del items[-SLICE:]


def _lists_of(document: Any) -> list[list[Any]]:
    if isinstance(document, list):
        return [document]
    if isinstance(document, dict):
        values = list(document.values())
    elif dataclasses.is_dataclass(document) and not isinstance(document, type):
        values = [getattr(document, field.name) for field in dataclasses.fields(document)]
    else:
        values = []
    return [value for value in values if isinstance(value, list)]
