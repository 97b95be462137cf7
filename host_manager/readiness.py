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
REQUEST_TIMEOUT = 2.0


async def wait_ready(process: HostProcess, url: str, timeout: float,
                     log_tail: Callable[[], list[str]]) -> None:
    deadline = time.monotonic() + timeout
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
                raise HostUnavailable(
                    f"the Host did not answer its agent card within {timeout:g} s", log_tail())
            await asyncio.wait({process.exited}, timeout=POLL_INTERVAL)
