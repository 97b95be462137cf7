"""Is a new Host generation Ready? Its agent card answers 200.

Polls until then, the process exits, or the start timeout passes; the last two raise
HostUnavailable with the generation's last log lines.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import aiohttp

from llamon_playground.host_manager.errors import HostUnavailable
from llamon_playground.host_manager.process import HostProcess

CARD_PATH = "/.well-known/agent-card.json"
POLL_INTERVAL = 0.02  # seconds between card requests, cut short when the process exits
# A warm start is Ready within tens of milliseconds: poll more often at first.
EARLY_POLL_INTERVAL = 0.005
EARLY_POLL_S = 0.2
REQUEST_TIMEOUT = 2.0


async def wait_ready(process: HostProcess, url: str, timeout: float,
                     log_tail: Callable[[], list[str]]) -> None:
    started = time.monotonic()
    deadline = started + timeout
    async with aiohttp.ClientSession(
            timeout=aiohttp.ClientTimeout(total=REQUEST_TIMEOUT)) as http:
        while True:
            if process.exited.done():
                raise HostUnavailable(
                    f"the Host exited with code {process.returncode} before it was Ready",
                    log_tail())
            try:
                async with http.get(url + CARD_PATH) as resp:
                    if resp.status == 200:
                        await resp.read()
                        return
            except (aiohttp.ClientError, TimeoutError):
                pass
            if time.monotonic() > deadline:
                raise HostUnavailable(not_ready_message(url, timeout), log_tail())
            early = time.monotonic() - started < EARLY_POLL_S
            await asyncio.wait({process.exited},
                               timeout=EARLY_POLL_INTERVAL if early else POLL_INTERVAL)


def not_ready_message(url: str, timeout: float) -> str:
    """A Host that never answered where it was told to serve: name the port, the URL and
    the usual cause (a Host listening on a port of its own choosing)."""
    port = url.rsplit(":", 1)[-1]
    return (f"the Host did not answer its agent card at {url}{CARD_PATH} within {timeout:g} s. "
            f"The Playground started it with LLAMON_HOST_PORT={port} (LLAMON_HOST_URL={url}): "
            "the Host must listen on 127.0.0.1 at that port; one that ignores "
            "LLAMON_HOST_PORT and serves on a fixed port is never found. Read the port from "
            "the environment (and raise LLAMON_PLAYGROUND_HOST_START_TIMEOUT if it is just "
            "slow to start)")
