"""Who is on the other end of the daemon's Unix socket (SO_PEERCRED on Linux, LOCAL_PEERCRED
on macOS: the platform seam), and refusing others.

The socket is 0600 in a 0700 directory, so only our uid (and root) can connect; this check
is the second lock for when those permissions are loosened by mistake: a client of another
uid gets 403 `peer_not_allowed` on every route, /health included. A system that cannot say who
the caller is refuses it the same way.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from collections.abc import Awaitable, Callable

from aiohttp import web

from llamon_playground.common.http_json import error_response
from llamon_playground.common.platform import current as current_platform

log = logging.getLogger(__name__)
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def peer_uid(transport: asyncio.BaseTransport | None) -> int | None:
    """The connecting process's uid, or None when the transport is not a Unix socket; -1
    when the system cannot say (never our uid: refused)."""
    sock = transport.get_extra_info("socket") if transport is not None else None
    if sock is None or sock.family != socket.AF_UNIX:
        return None
    return socket_peer_uid(sock)


def socket_peer_uid(sock: socket.socket) -> int:
    """A connected Unix socket's peer uid; -1 when the system cannot say."""
    try:
        return current_platform().peer_uid(sock)
    except (OSError, ValueError) as exc:
        log.warning("could not tell the caller's uid: %s", exc)
        return -1


@web.middleware
async def peer_cred_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Refuse (403 `peer_not_allowed`, connection closed) a request on the daemon socket from
    another user."""
    uid = peer_uid(request.transport)
    if uid is not None and uid != os.getuid():
        log.warning("refused a request from uid %d on the daemon socket", uid)
        response = error_response(403, "peer_not_allowed",
                                  "this daemon serves only its own user")
        response.force_close()
        return response
    return await handler(request)
