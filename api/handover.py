"""The front's side of a hand-over (common/handover.py): which requests go, and letting go.

A stream (a run's events, the project's events, the Host log followed) is the one kind of
request whose relaying costs the front for as long as it lasts; so, once the door has
admitted one, its connection goes to the daemon, which answers on it and closes it. The
front keeps nothing: the stream goes on if the front stops, and it no longer counts
against the front's connection cap (the daemon has its own). When the daemon cannot take
it (busy, an older daemon, a socket that is not TCP) the request is relayed as before.
"""

from __future__ import annotations

import logging
import re
import socket

from aiohttp import web

from llamon_playground.common.contract import API_PREFIX
from llamon_playground.common.handover import Outcome, offer

log = logging.getLogger(__name__)

STREAM_PATH = re.compile(rf"{API_PREFIX}/(?:runs/[^/]+/events|events|host/logs)")
HOST_LOGS = f"{API_PREFIX}/host/logs"
TCP_FAMILIES = (socket.AF_INET, socket.AF_INET6)


def wants_handover(request: web.Request) -> bool:
    return (request.method == "GET" and not request.body_exists
            and STREAM_PATH.fullmatch(request.path) is not None
            and (request.path != HOST_LOGS or "follow" in request.query))


async def hand_over(request: web.Request, path: str, head: bytes) -> web.StreamResponse | None:
    """Hand the request's connection to the daemon at `path`; None if the front should relay
    it instead. Once handed over (or maybe handed over), the front writes nothing more on
    the connection: the answer returned here is only for the door's log line."""
    transport = request.transport
    sock = transport.get_extra_info("socket") if transport is not None else None
    if sock is None or sock.family not in TCP_FAMILIES:
        return None
    outcome = await offer(path, sock.fileno(), head)
    if outcome in (Outcome.NOT_SENT, Outcome.BUSY):
        log.debug("relaying %s: the daemon did not take it (%s)", request.path, outcome.value)
        return None
    # Closes this process's descriptor only: the daemon holds its own, so the client's
    # connection stays open (asyncio's close never shuts the socket down).
    request.protocol.force_close()
    if outcome is Outcome.UNKNOWN:
        log.warning("no clear answer from the daemon on a hand-over of %s; the client's "
                    "connection is left to it", request.path)
        return web.Response(status=503)
    return web.Response(status=200, reason="Handed over")
