"""Who holds the front's connection slots, and who gives one up first.

A connection is *pending* from the moment it is accepted until a request on it passes the
door (a valid token, or any request when auth is off); from then on it is *admitted*, and
remembers which token it was admitted with. So that nobody without the token can hold the
door shut by opening connections and sending nothing:
- a pending connection gets `head_timeout` seconds (much less than the idle timeout) to
  send a request the door admits, then it is closed;
- when the cap is reached, a new connection takes the slot of the oldest pending one
  (one that has sent nothing before one that has), so a client with the token always gets
  one; only when every slot is admitted is the new connection refused.
When the token changes (`token --rotate`), every connection admitted with the old one is
ended, a stream on it included (a lent stream too: its socket is shut down under the
daemon, which the front then tells to stop).
"""

from __future__ import annotations

import asyncio
import logging
import socket

from aiohttp import web
from aiohttp.web_protocol import RequestHandler

from llamon_playground.api.auth import TokenAuth
from llamon_playground.common.parser_errors import PlainRequestHandler, PlainRunner, PlainServer

log = logging.getLogger(__name__)


class Slots:
    """The front's connections by standing: pending (oldest first) and admitted."""

    def __init__(self, head_timeout: float) -> None:
        self.head_timeout = head_timeout
        # Insertion order is age: the first evictable one is the oldest.
        self.pending: dict[RequestHandler, asyncio.TimerHandle] = {}
        self.admitted: dict[RequestHandler, int] = {}  # -> the token generation it used

    def opened(self, handler: DoorRequestHandler) -> None:
        handler.slots = self
        timer = asyncio.get_running_loop().call_later(self.head_timeout, self._expire, handler)
        self.pending[handler] = timer

    def admit(self, handler: RequestHandler, generation: int) -> None:
        """A request on `handler`'s connection passed the door."""
        timer = self.pending.pop(handler, None)
        if timer is not None:
            timer.cancel()
        if handler.transport is not None:
            self.admitted[handler] = generation

    def lost(self, handler: RequestHandler) -> None:
        timer = self.pending.pop(handler, None)
        if timer is not None:
            timer.cancel()
        self.admitted.pop(handler, None)

    def evict_one(self) -> bool:
        """Close the oldest pending connection (a silent one first); False if none is open."""
        victim = None
        for handler in self.pending:
            if handler.transport is None:
                continue  # made but not yet connected: nothing to close yet
            if not getattr(handler, "spoke", True):
                victim = handler
                break
            if victim is None:
                victim = handler
        if victim is None:
            return False
        _end(victim)
        return True

    def end_older_than(self, generation: int) -> int:
        """End every connection admitted with a token older than `generation`."""
        old = [handler for handler, seen in self.admitted.items() if seen < generation]
        for handler in old:
            self.admitted.pop(handler, None)
            _end(handler)
        return len(old)

    def _expire(self, handler: RequestHandler) -> None:
        if self.pending.pop(handler, None) is not None and handler.transport is not None:
            log.debug("closing a connection that sent no admitted request in %.1f s",
                      self.head_timeout)
            _end(handler)


def _end(handler: RequestHandler) -> None:
    """Close a connection now, whoever writes on it: shutting the socket down ends it for
    the client even while the daemon holds a lent copy of it; closing it cancels the
    request running on it (handler_cancellation), which lets go of any loan."""
    transport = handler.transport
    sock = transport.get_extra_info("socket") if transport is not None else None
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass  # already gone
    handler.force_close()


class DoorRequestHandler(PlainRequestHandler):
    """A front connection: answers parser errors plainly, and tells its Slots when it
    first receives bytes and when it is gone."""

    slots: Slots | None = None
    spoke = False

    def data_received(self, data: bytes) -> None:
        self.spoke = True
        super().data_received(data)

    def connection_lost(self, exc: BaseException | None) -> None:
        if self.slots is not None:
            self.slots.lost(self)
        super().connection_lost(exc)


class FrontServer(PlainServer):
    """A `web.Server` whose connections are DoorRequestHandlers."""

    handler_class = DoorRequestHandler


class FrontRunner(PlainRunner):
    """The front's `AppRunner`: parser errors answered plainly, connections in Slots."""

    server_class = FrontServer


SLOTS = web.AppKey("slots", Slots)
ROTATION_CHECK_EVERY = 0.25  # seconds: a rotated token ends old connections within a second


async def end_on_rotation(auth: TokenAuth, slots: Slots) -> None:
    """Watch the kept token; when it is replaced, end the connections admitted with the
    old one. (A request adopts the new token too: then this ends the rest.)"""
    ended = auth.generation
    while True:
        await asyncio.sleep(ROTATION_CHECK_EVERY)
        auth.refresh()
        if auth.generation != ended:
            ended = auth.generation
            count = slots.end_older_than(ended)
            log.info("the token was replaced: ended %d connection(s) that used the old one",
                     count)
