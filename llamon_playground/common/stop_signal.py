"""Waiting for SIGTERM/SIGINT in a long-lived process (daemon and front)."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable


async def wait_for_stop_signal(armed: Callable[[], object] = lambda: None,
                               stop: asyncio.Event | None = None) -> None:
    """Return on SIGTERM or SIGINT, or once `stop` is set (another reason to stop, as
    cleanly). `armed` runs once the handlers are in place: what it announces (READY=1, the
    front's URL) can be followed by a stop at once, cleanly."""
    loop = asyncio.get_running_loop()
    stop = stop if stop is not None else asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        armed()
        await stop.wait()
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)
