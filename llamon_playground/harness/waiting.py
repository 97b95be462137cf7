"""Polling a condition with a deadline: the one wait loop of the tests and the benchmark."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


class Deadline:
    """`check(last)` raises TimeoutError, naming what was awaited, once time is up."""

    def __init__(self, timeout: float, what: str) -> None:
        self.timeout = timeout
        self.what = what
        self._end = time.monotonic() + timeout

    def check(self, last: Any) -> None:
        if time.monotonic() > self._end:
            raise TimeoutError(f"timed out after {self.timeout} s waiting for {self.what}: "
                               f"{last!r}")


def wait_for(probe: Callable[[], T], timeout: float, what: str, interval: float = 0.02,
             check: Callable[[T], bool] = bool) -> T:
    """Call `probe` until `check` (by default: truthy) accepts its answer; return it.

    Synchronous on purpose: a stack starts its processes from fixtures that may already run
    inside an event loop.
    """
    deadline = Deadline(timeout, what)
    while True:
        value = probe()
        if check(value):
            return value
        deadline.check(value)
        time.sleep(interval)
