"""The front's side of a loan (common/handover.py): which requests, and the answer's end.

A stream (a run's events, the project's events, the Host log followed) is the one kind of
request whose relaying costs the front for as long as it lasts; so, once the door has
admitted one, the front lends its connection to the daemon, which writes the answer on it
directly. The front keeps the connection: it waits for the daemon's END and then serves
the next request on it (or closes it, when the answer said so or was cut). When the
daemon cannot take it (busy, an older daemon, a socket that is not TCP) the request is
relayed as before.
"""

from __future__ import annotations

import logging

from aiohttp import web

from llamon_playground.api.aiohttp_adapter import AnsweredElsewhere
from llamon_playground.common.handover import CUT, TCP_FAMILIES, End, Loan, Outcome
from llamon_playground.common.wire.routes import front_routes

log = logging.getLogger(__name__)

def wants_handover(request: web.Request) -> bool:
    """A stream the daemon's route declaration names (common/wire/routes.py)."""
    return not request.body_exists and front_routes().is_stream(
        request.method, request.path, frozenset(request.query))


async def hand_over(request: web.Request, path: str, head: bytes) -> web.StreamResponse | None:
    """Lend the request's connection to the daemon at `path` for its answer; None if the
    front should relay it instead."""
    transport = request.transport
    sock = transport.get_extra_info("socket") if transport is not None else None
    if sock is None or sock.family not in TCP_FAMILIES:
        return None
    outcome, loan = await Loan.offer(path, sock.fileno(), head)
    if outcome in (Outcome.NOT_SENT, Outcome.BUSY):
        log.debug("relaying %s: the daemon did not take it (%s)", request.path, outcome.value)
        return None
    end = CUT if loan is None else await _until_given_back(loan)
    if end is CUT:
        log.info("the daemon's answer to %s was cut; closing the client's connection",
                 request.path)
    elif not request.keep_alive:
        end = End(end.status, False)  # the client asked to close (so was the daemon told)
    # aiohttp writes nothing more, and keeps the connection only if the daemon's answer
    # allowed it and came whole.
    return AnsweredElsewhere(end.status or 503, end.keep_alive)


async def _until_given_back(loan: Loan) -> End:
    try:
        end = await loan.end()
        if end is CUT:
            loan.let_go()
        return end
    except BaseException:  # cancelled: the client left, or the front is stopping
        loan.let_go()
        raise
    finally:
        loan.close()
