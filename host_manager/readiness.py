"""Is a new Host generation Ready (its agent card answers 200), and is it shut to web pages?

Polls until then, the process exits, or the start timeout passes; the last two raise
HostUnavailable with the generation's last log lines. Besides its polls, it asks each time
the Host writes output (at most every MIN_GAP): a server says it listens just as it starts
to (uvicorn's "Uvicorn running on", the example's "ready on"), so a Host is Ready the moment
it says so rather than up to a poll interval later (20 ms past the first 200 ms: a cold
start's usual case).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import aiohttp

from llamon_playground.host_manager.errors import HostUnavailable
from llamon_playground.host_manager.process import HostProcess

CARD_PATH = "/.well-known/agent-card.json"
POLL_INTERVAL = 0.02  # seconds between card requests, cut short when the process exits
# A warm start is Ready within tens of milliseconds: poll more often at first.
EARLY_POLL_INTERVAL = 0.005
EARLY_POLL_S = 0.2
MIN_GAP = 0.002  # between two probes: a Host that logs on and on costs ~10 % of a core
REQUEST_TIMEOUT = 2.0
DRAIN_TIMEOUT = 0.5  # how long an exited Host's pipes may take to deliver its last lines


def probe_session() -> aiohttp.ClientSession:
    """One client for a generation's readiness probe and exposure check: the check reuses
    the connection the probe opened (each new connection is work for a Host just started)."""
    return aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=REQUEST_TIMEOUT))


async def wait_ready(process: HostProcess, url: str, timeout: float,
                     log_tail: Callable[[], list[str]], http: aiohttp.ClientSession) -> bytes:
    """The agent card's body once it answers 200 (the exposure probe reads it again for
    nothing otherwise); asked through `http` (probe_session)."""
    started = time.monotonic()
    deadline = started + timeout
    while True:
        asked = time.monotonic()
        spoke = process.next_output()  # before the probe: a line during it counts
        if process.exited.done():
            await process.drain(DRAIN_TIMEOUT)
            raise HostUnavailable(
                f"the Host exited with code {process.returncode} before it was Ready",
                log_tail())
        try:
            async with http.get(url + CARD_PATH) as resp:
                if resp.status == 200:
                    return await resp.read()
        except (aiohttp.ClientError, TimeoutError):
            pass
        if time.monotonic() > deadline:
            raise HostUnavailable(not_ready_message(url, timeout), log_tail())
        early = asked - started < EARLY_POLL_S
        either: set[asyncio.Future[Any]] = {process.exited, spoke}
        await asyncio.wait(either,
                           timeout=EARLY_POLL_INTERVAL if early else POLL_INTERVAL,
                           return_when=asyncio.FIRST_COMPLETED)
        gap = asked + MIN_GAP - time.monotonic()
        if gap > 0:
            await asyncio.sleep(gap)


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


# -- exposure ---------------------------------------------------------------------------------
# Once Ready, the new generation is tried the way a web page would: by a DNS-rebound name
# (a foreign Host header, which lets a page read answers) and by a blind cross-site POST
# (a foreign Origin with text/plain, which needs no CORS preflight). A Host that serves
# either is reachable by any page the developer opens.
PROBE_TIMEOUT = 1.0
FOREIGN_HOST = "llamon-probe.invalid"
FOREIGN_ORIGIN = "http://llamon-probe.invalid"
EXPOSED_FIX = ("serve only requests whose Host header is 127.0.0.1:<port> or "
               "localhost:<port>, refuse a foreign Origin and any body that is not "
               "Content-Type: application/json (a Python ASGI Host can wrap its app in "
               "llamon_playground.host_manager.host_side.capture.LoopbackGuard); see docs/host.md")


async def exposure(url: str, card: bytes, http: aiohttp.ClientSession) -> list[str]:
    """What a web page could do to the Host at `url` (empty when it refuses both); `card` is
    the agent card it served to the readiness probe, through the same `http`. Both tries go
    at once: they are on the path of every restart."""
    port = url.rsplit(":", 1)[1]
    timeout = aiohttp.ClientTimeout(total=PROBE_TIMEOUT)
    probe = (b'{"jsonrpc":"2.0","id":"llamon-probe","method":"GetTask",'
             b'"params":{"id":"llamon-probe"}}')
    rebound, blind = await asyncio.gather(
        _answers(http.get(url + CARD_PATH, headers={"Host": f"{FOREIGN_HOST}:{port}"},
                          timeout=timeout)),
        _answers(http.post(url + rpc_path(card), data=probe, timeout=timeout, headers={
            "Origin": FOREIGN_ORIGIN, "Content-Type": "text/plain"})))
    found = []
    if rebound:
        found.append("answers requests sent to a foreign host name (DNS rebinding)")
    if blind:
        found.append("takes a cross-site text/plain POST (a blind request from any page)")
    return found


def rpc_path(card_body: bytes) -> str:
    """The path of the card's first interface (where a page would post), else "/"."""
    try:
        card = json.loads(card_body)
    except ValueError:
        return "/"
    entries = card.get("supportedInterfaces") if isinstance(card, dict) else None
    first = entries[0] if isinstance(entries, list) and entries else card
    target = first.get("url") if isinstance(first, dict) else None
    return urlsplit(target).path or "/" if isinstance(target, str) else "/"


async def _answers(request: Any) -> bool:
    try:
        async with request as resp:
            await resp.read()
            return bool(resp.status < 400)
    except (aiohttp.ClientError, TimeoutError):
        return False


def exposed_warning(url: str, found: list[str]) -> dict[str, str]:
    return {"code": "host_exposed",
            "message": f"the Host at {url} is reachable by any web page: it "
                       + " and ".join(found),
            "fix": EXPOSED_FIX}
