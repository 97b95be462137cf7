"""Waiting on a condition with a deadline: the one poll loop of the tests (never a bare
sleep as synchronisation).

`eventually` polls an async probe or a plain one (a value read in the test's own loop); `wait_for` calls a plain one from sync code (a fixture,
a Stack starting its processes, which may run inside a test's event loop and so cannot
start another). Both poll until `check` accepts the probe's answer and fail at the deadline
with that answer in the message. `wait_for` and `Deadline` are the harness's (the benchmark
uses them too).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from llamon_playground.harness.waiting import Deadline, wait_for

__all__ = ["Deadline", "eventually", "host_status", "wait_for", "watcher_settled"]

if TYPE_CHECKING:
    from tests.support.api import Api

T = TypeVar("T")


async def eventually(probe: Callable[[], Awaitable[T] | T], check: Callable[[T], bool] = bool,
                     what: str = "a condition", timeout: float = 20.0,
                     interval: float = 0.05) -> T:
    """Call `probe` (awaiting its answer when it is awaitable) until `check` accepts the
    answer; return that answer. The loop sleeps between probes, so other tasks run."""
    deadline = Deadline(timeout, what)
    while True:
        answer = probe()
        value: T = await answer if inspect.isawaitable(answer) else answer  # type: ignore[assignment]
        if check(value):
            return value
        deadline.check(value)
        await asyncio.sleep(interval)


async def host_status(api: Api, check: Callable[[dict[str, Any]], bool], what: str,
                      timeout: float = 20.0) -> dict[str, Any]:
    return await eventually(lambda: api.ok("GET", "host"), check, what, timeout)


async def watcher_settled(api: Api, sentinel: Any, timeout: float = 20.0) -> dict[str, Any]:
    """Save a watched file with identical content (a no-op for the Host) and wait until the
    watcher has reacted: every change made before it has then been handled too."""
    before = (await api.ok("GET", "host"))["watch"]["batches"]
    sentinel.write_bytes(sentinel.read_bytes())
    return await host_status(api, lambda s: s["watch"]["batches"] > before,
                             "the watcher to react", timeout)
