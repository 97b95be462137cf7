"""Values computed from a source file, kept while the file's (mtime_ns, size) is unchanged.

The composer shows the graph as it is on disk now: an edit is seen on the next call, and an
unchanged file is not parsed again. The stat is taken before the read, so a write racing the
read at worst costs one extra parse on the next call, never a stale answer.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Generic, TypeVar

T = TypeVar("T")

MAX_ENTRIES = 256  # a project has a few dozen modules; this only bounds a pathological one


class FileCache(Generic[T]):
    """`get(path)` → `build(path, text)`, rebuilt only when the file's stamp changes.

    Safe to call from worker threads (the routes parse off the event loop).
    """

    def __init__(self, build: Callable[[Path, str], T]) -> None:
        self._build = build
        self._entries: OrderedDict[Path, tuple[tuple[int, int], T]] = OrderedDict()
        self._lock = threading.Lock()
        self.builds = 0  # how many times a file was (re)parsed: tests assert on it

    def get(self, path: Path) -> T:
        """Raises OSError (FileNotFoundError...) or UnicodeDecodeError like reading would."""
        st = os.stat(path)
        stamp = (st.st_mtime_ns, st.st_size)
        with self._lock:
            hit = self._entries.get(path)
            if hit is not None and hit[0] == stamp:
                self._entries.move_to_end(path)
                return hit[1]
        value = self._build(path, path.read_bytes().decode("utf-8"))
        with self._lock:
            self.builds += 1
            self._entries[path] = (stamp, value)
            self._entries.move_to_end(path)
            while len(self._entries) > MAX_ENTRIES:
                self._entries.popitem(last=False)
        return value
