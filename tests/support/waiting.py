"""Waiting on a condition with a deadline (never a bare sleep as synchronisation)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from tests.support.api import Api

T = TypeVar("T")


async def eventually(probe: Callable[[], Awaitable[T]], check: Callable[[T], bool],
                     what: str, timeout: float = 20.0, interval: float = 0.05) -> T:
    """Call `probe` until `check` accepts its answer; fail with the last answer at the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        value = await probe()
        if check(value):
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout} s waiting for {what}: {value!r}")
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
