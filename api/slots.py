"""Who holds the front's connection slots, and who gives one up first.

A connection is *pending* from the moment it is accepted until a request on it passes the
door (a valid token, or any request when auth is off); from then on it is *admitted*, and
remembers which token it was admitted with. So that nobody without the token can hold the
door shut, however many connections they open and however fast:
- a pending connection gets `head_timeout` seconds (much less than the idle timeout) to
  send a request the door admits, then it is closed;
- when the cap is reached, a new connection takes the slot of the oldest pending one that
  is *ripe*: one that has had GRACE seconds and two turns of the event loop (the front's
  chance to read what a client sent at once) to show its head, and, once a whole head
  came, GRACE and three turns more for the door to judge it. A client with the token sends
  its head as it connects, so its connection is admitted before any flood can take its
  slot. Until one is ripe, new connections wait in the kernel's queue
  (api/connections.py); when every slot is admitted, the new one is answered
  `503 too_many_connections` and closed;
- the token holder's streams (what api/handover.py lends) are capped below the connection
  cap (`stream_cap`): one past it is answered `429 too_many_streams` and its connection
  closed, so its own streams never lock it out of the rest of the API;
- at most JUDGING connections whose head asks for a stream are pending at once (the lobby
  keeps the rest, api/connections.py): each costs the event loop a few turns until the
  door has judged it, and a burst of them all at once made every turn long, a probe's
  connection among them waiting for several.
When the token changes (`token --rotate`), every connection admitted with the old one is
ended, a stream on it included (a lent stream too: its socket is shut down under the
daemon, which the front then tells to stop).
"""

from __future__ import annotations

import asyncio
import logging
import socket

from aiohttp import web
from aiohttp.web import RequestHandler

from llamon_playground.api.auth import TokenAuth
from llamon_playground.common.parser_errors import PlainRequestHandler

log = logging.getLogger(__name__)


# How long a pending connection keeps its slot, whatever else arrives. Measured on
# 2026-12-04 (2 cores, other work keeping the load average at 10-11), for the token
# holder's connections to a front under a 300-socket reconnect flood of partial heads
# (scripts/benchmarks/children/reconnect_flood.py): its first bytes were read 1.4 ms (median),
# 21 ms (p99), 36 ms (max, of 341) after the front made the connection, and its head
# admitted 37 ms after at most. GRACE is nearly three times that maximum; the two loop
# turns (Slots.arrived) cover a front that is itself late to read. A longer grace would
# cost the token holder more: while every pending slot is in its grace, its new connection
# waits in the kernel's queue.
GRACE = 0.1
BURST = 32  # connections accepted in one go at most (each is made on the loop's next turn)
# Connections asking for a stream that are pending at once at most. Measured on 2026-12-04
# (2 busy cores), the token holder opening 1,000 streams at once: with all of them let in
# (up to the 256 slots), one turn of the front's loop took 20-50 ms and a /health probe
# needed several; with 16, the burst took no longer and the probe passed in a few ms.
JUDGING = 16
TOO_MANY_BODY = (b'{"detail":{"error":"too_many_connections","message":"the front has too many '
                 b'open connections; retry later"}}')
TOO_MANY = (b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
            b"Retry-After: 1\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s"
            % (len(TOO_MANY_BODY), TOO_MANY_BODY))


def stream_cap(cap: int) -> int:
    """How many streams the front serves at once: a quarter of its slots (at least two)
    stay for everything else."""
    return cap - max(2, cap // 4)


class Slots:
    """The front's connections by standing: pending (oldest first) and admitted; and which
    admitted ones are running a stream."""

    def __init__(self, head_timeout: float, cap: int, grace: float = GRACE) -> None:
        self.head_timeout, self.cap, self.grace = head_timeout, cap, grace
        self.max_streams = stream_cap(cap)
        # Insertion order is age: the first evictable one is the oldest.
        self.pending: dict[DoorRequestHandler, asyncio.TimerHandle] = {}
        self.admitted: dict[RequestHandler, int] = {}  # -> the token generation it used
        self.streams: set[RequestHandler] = set()
        # Pending connections whose head the lobby judged to ask for a stream.
        self.judging: set[RequestHandler] = set()
        self._freed = asyncio.Event()  # set when a connection leaves its slot (or judging)

    async def room(self) -> int:
        """How many connections may be accepted now (at least one), once there is room: a
        free slot, a ripe pending connection to give its slot up, or no pending one at all
        (then every slot is admitted, and the next one is refused)."""
        loop = asyncio.get_running_loop()
        while True:
            free = self.cap - len(self.pending) - len(self.admitted)
            if free > 0:
                return min(free, BURST)
            if not self.pending:
                return 1
            ripe = 0
            now = loop.time()
            for handler in self.pending:
                if ripe == BURST:
                    break
                if handler.ripe(now):
                    ripe += 1
                elif not handler.heard:
                    break  # a younger one can't be ripe: it was made later
            if ripe:
                return ripe
            soonest = min(handler.ripe_at for handler in self.pending)
            self._freed.clear()
            try:  # a slot freed, or a pending one ripe
                await asyncio.wait_for(self._freed.wait(), max(soonest - now, 0.001))
            except TimeoutError:
                pass

    def stream_room(self) -> int:
        """How many more connections asking for a stream may be served now."""
        return max(0, JUDGING - len(self.judging))

    def asks_stream(self, handler: DoorRequestHandler) -> None:
        """`handler`'s connection asks for a stream: it counts against JUDGING while pending."""
        if handler in self.pending:
            self.judging.add(handler)

    def poke(self) -> None:
        """Something the accepting waits for changed (api/connections.py, CappedSite)."""
        self._freed.set()

    async def changed(self, timeout: float) -> None:
        """Until a slot is freed, a judged connection leaves its pending state, or `poke`;
        at most `timeout` seconds."""
        self._freed.clear()
        try:
            await asyncio.wait_for(self._freed.wait(), timeout)
        except TimeoutError:
            pass

    def arrived(self, handler: DoorRequestHandler) -> bool:
        """A connection was made: True once it has a slot (perhaps another's), False if it
        gets none (the caller refuses it)."""
        if len(self.pending) + len(self.admitted) >= self.cap and not self.evict_one():
            return False
        loop = asyncio.get_running_loop()
        handler.grace = self.grace
        # Two turns: the next one registers its reader (queued with connection_made), the
        # one after reads what the client sent; only then can it be judged silent.
        handler.wait(2)
        self.pending[handler] = loop.call_later(self.head_timeout, self._expire, handler)
        return True

    def admit(self, handler: RequestHandler, generation: int) -> None:
        """A request on `handler`'s connection passed the door."""
        self._unpend(handler)
        if handler.transport is not None:
            self.admitted[handler] = generation

    def lost(self, handler: RequestHandler) -> None:
        self._unpend(handler)
        self.admitted.pop(handler, None)
        self.streams.discard(handler)
        self._freed.set()

    def evict_one(self) -> bool:
        """Close the oldest ripe pending connection; False if none is ripe."""
        now = asyncio.get_running_loop().time()
        for handler in self.pending:
            if handler.ripe(now):
                self._unpend(handler)
                _end(handler)
                return True
            if not handler.heard:
                return False  # older ones come first: every later one is in its grace too
        return False

    def stream_begins(self, handler: RequestHandler) -> bool:
        """A stream starts on `handler`'s connection: False when the cap is reached."""
        if len(self.streams) >= self.max_streams:
            return False
        self.streams.add(handler)
        return True

    def stream_ends(self, handler: RequestHandler) -> None:
        self.streams.discard(handler)

    def end_older_than(self, generation: int) -> int:
        """End every connection admitted with a token older than `generation`."""
        old = [handler for handler, seen in self.admitted.items() if seen < generation]
        for handler in old:
            self.admitted.pop(handler, None)
            _end(handler)
        return len(old)

    def _unpend(self, handler: RequestHandler) -> asyncio.TimerHandle | None:
        """`handler` is no longer pending (its head timer cancelled); the timer, or None if
        it was not pending."""
        timer: asyncio.TimerHandle | None = self.pending.pop(
            handler, None)  # type: ignore[call-overload]
        if timer is not None:
            timer.cancel()
        if handler in self.judging:
            self.judging.discard(handler)
            self._freed.set()
        return timer

    def _expire(self, handler: DoorRequestHandler) -> None:
        if self._unpend(handler) is not None and handler.transport is not None:
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
    """A front connection: answers parser errors plainly, and asks its Slots for a slot
    when it is made (refused with a 503 when there is none) and tells them when it is gone."""

    slots: Slots | None = None
    grace = 0.0
    ripe_at = 0.0  # loop time from which it may give its slot up (Slots.arrived)
    turns = 0  # loop turns still to wait for before it may give its slot up
    heard = False  # a whole head arrived while it was pending: it gets a grace of its own
    _tail = b""
    _waits = 0

    def wait(self, turns: int) -> None:
        """A grace from now, and at least `turns` turns of the loop."""
        loop = asyncio.get_running_loop()
        self.ripe_at = loop.time() + self.grace
        self.turns = turns
        self._waits += 1
        loop.call_soon(self._turn, self._waits)

    def _turn(self, wait: int) -> None:
        if wait == self._waits:  # an older wait's turns no longer count
            self.turns -= 1
            if self.turns > 0:
                asyncio.get_running_loop().call_soon(self._turn, wait)

    def ripe(self, now: float) -> bool:
        return self.turns <= 0 and now >= self.ripe_at

    def data_received(self, data: bytes) -> None:
        if (not self.heard and self.slots is not None and self in self.slots.pending
                and (b"\r\n\r\n" in data or b"\r\n\r\n" in self._tail + data[:3])):
            # A head came whole: the door decides on it a turn or two later (the request's
            # task runs, then the door); until then, and for a grace, it is no longer a
            # connection that has not shown its head. A refused one ripens after that.
            self.heard = True
            self.wait(3)
        elif not self.heard:
            self._tail = (self._tail + data[-3:])[-3:]
        super().data_received(data)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        if self.slots is not None and not self.slots.arrived(self):
            assert isinstance(transport, asyncio.WriteTransport)
            transport.write(TOO_MANY)
            self.force_close()  # the answer is flushed before the close

    def connection_lost(self, exc: BaseException | None) -> None:
        if self.slots is not None:
            self.slots.lost(self)
        super().connection_lost(exc)


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
