"""A minimal A2A JSON-RPC client over aiohttp: streaming send, cancel, get (1.0 and 0.3)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import aiohttp
import orjson

from llamon_playground.common.limits import DEFAULT_LIMITS, LIMIT_ENV_NAMES, Limits
from llamon_playground.common.sse import SseEvent, SseParser
from llamon_playground.daemon.a2a.wire import (
    V1,
    A2AEvent,
    A2AProtocolError,
    Interface,
    choose_interface,
    parse_result,
)

CARD_PATH = "/.well-known/agent-card.json"
# While a Host streams, the connection is read at most once per READ_PACE: what arrived
# meanwhile waits in the socket buffer and is taken in one read. Reading every frame as it
# came cost a wake-up, a recv, aiohttp's parsing and a round of the loop per token (about
# a third of the daemon's CPU a delta). A frame after a quiet spell is read at once; one
# in a fast stream waits at most this long, well under the store's commit interval. Until
# the first output (an artifact) has come, reads are not paced: the task and status frames
# that open a stream would otherwise each hold the first token back by a pace.
READ_PACE = 0.005
# Nor until more than UNPACED_OUTPUTS outputs have come: a short answer's end (its last status frame, the
# stream's close) then comes right behind its token instead of a pace later (a one-token run's
# create -> done paid READ_PACE and more on a busy loop). A long stream is paced from here on,
# so its cost per token is what it was.
UNPACED_OUTPUTS = 8
# The longest a `hold` (see A2AClient.stream) keeps the Host's stream unread: a commit held
# up (a long write op ahead of it) must not hold the Host up as long.
HOLD_MAX = 0.05
METHODS = {
    V1: {"stream": "SendStreamingMessage", "cancel": "CancelTask"},
    "0.3": {"stream": "message/stream", "cancel": "tasks/cancel"},
}


class A2AUnavailable(Exception):
    """The Host could not be reached or broke the connection."""


class HostOutputTooLarge(A2AProtocolError):
    """The Host streamed a line, an event or a run's worth of output over its limit; the
    message names the limit and the setting that raises it."""

    def __init__(self, what: str, limit: int, field: str) -> None:
        self.message = (f"the Host sent {what} of more than {limit} bytes (the limit; "
                        f"{LIMIT_ENV_NAMES[field]} raises it)")
        super().__init__(self.message)


class A2AClient:
    """Talks to one Host generation's agent; every transport failure comes out as A2AUnavailable."""

    def __init__(self, http: aiohttp.ClientSession, base_url: str) -> None:
        self._http = http
        self.base_url = base_url.rstrip("/")

    async def fetch_card(self, timeout: float = 5.0) -> dict[str, Any]:
        """The Host's agent card; A2AUnavailable when it does not answer with a JSON object
        within `timeout` s."""
        try:
            async with self._http.get(self.base_url + CARD_PATH,
                                      timeout=aiohttp.ClientTimeout(total=timeout)) as resp:
                if resp.status != 200:
                    raise A2AUnavailable(f"agent card answered HTTP {resp.status}")
                card = orjson.loads(await resp.read())
        except (aiohttp.ClientError, TimeoutError, orjson.JSONDecodeError) as exc:
            raise A2AUnavailable(f"agent card not available: {exc}") from exc
        if not isinstance(card, dict):
            raise A2AUnavailable("agent card is not a JSON object")
        return card

    async def probe(self, timeout: float) -> bool:
        """Does the Host still answer at all? (Its agent card, with a short timeout.)"""
        try:
            await self.fetch_card(timeout)
        except A2AUnavailable:
            return False
        return True

    async def interface(self, served: bytes | None = None) -> Interface:
        """The interface to speak to the Host, chosen from its agent card: `served`, the
        card as the Host already served it (to the readiness probe), else fetched."""
        if served is not None:
            try:
                card = orjson.loads(served)
            except orjson.JSONDecodeError:
                card = None
            if isinstance(card, dict):
                return choose_interface(card, self.base_url)
        return choose_interface(await self.fetch_card(), self.base_url)

    def _request(self, interface: Interface, method: str,
                 params: dict[str, Any]) -> tuple[bytes, dict[str, str]]:
        body = orjson.dumps({"jsonrpc": "2.0", "id": str(uuid.uuid4()),
                             "method": METHODS[interface.version][method], "params": params})
        headers = {"Content-Type": "application/json"}
        if interface.version == V1:
            headers["A2A-Version"] = "1.0"
        return body, headers

    async def stream(self, interface: Interface, message: dict[str, Any],
                     metadata: dict[str, Any], limits: Limits = DEFAULT_LIMITS,
                     trace_context: Mapping[str, str] | None = None,
                     hold: Callable[[], asyncio.Future[None] | None] | None = None
                     ) -> AsyncIterator[list[A2AEvent]]:
        """Send a message and yield the streamed events, in order, a read's worth at a time
        (never an empty list), until the Host closes the stream. Output over `limits`
        raises HostOutputTooLarge. `trace_context`: W3C `traceparent`/`tracestate` headers,
        so a Host's own spans join the run's trace. `hold`, asked after each read's events
        were taken: a future to wait for (at most HOLD_MAX) before the stream is read on."""
        body, headers = self._request(interface, "stream",
                                      {"message": message, "metadata": metadata})
        headers["Accept"] = "text/event-stream"
        if trace_context:
            headers.update(trace_context)
        try:
            async with self._http.post(interface.url, data=body, headers=headers,
                                       timeout=aiohttp.ClientTimeout(total=None,
                                                                     sock_connect=5)) as resp:
                ctype = resp.headers.get("Content-Type", "")
                if not ctype.startswith("text/event-stream"):
                    # Errors found before streaming come back as a plain JSON body.
                    raw = await _read_bounded(resp, limits.host_event_bytes)
                    try:
                        yield [parse_result(orjson.loads(raw))]
                    except (orjson.JSONDecodeError, A2AProtocolError) as exc:
                        raise A2AProtocolError(
                            f"Host answered HTTP {resp.status} {ctype or 'no content type'}"
                        ) from exc
                    return
                async for events in _read_sse(resp, limits, hold):
                    yield events
        except (aiohttp.ClientError, ConnectionError) as exc:
            raise A2AUnavailable(f"stream to the Host broke: {exc}") from exc

    async def cancel(self, interface: Interface, task_id: str, timeout: float = 3.0) -> None:
        """Ask the Host to cancel the task `task_id`."""
        await self._call(interface, "cancel", {"id": task_id}, timeout)

    async def _call(self, interface: Interface, method: str, params: dict[str, Any],
                    timeout: float) -> dict[str, Any]:
        body, headers = self._request(interface, method, params)
        try:
            async with self._http.post(interface.url, data=body, headers=headers,
                                       timeout=aiohttp.ClientTimeout(total=timeout)) as resp:
                doc = orjson.loads(await resp.read())
        except (aiohttp.ClientError, TimeoutError, orjson.JSONDecodeError) as exc:
            raise A2AUnavailable(f"{method} failed: {exc}") from exc
        if not isinstance(doc, dict):
            raise A2AProtocolError(f"{method}: not a JSON-RPC object")
        return doc


async def _read_bounded(resp: aiohttp.ClientResponse, limit: int) -> bytes:
    """A plain (not streamed) answer's body, refused past `limit` bytes."""
    body = bytearray()
    async for chunk in resp.content.iter_any():
        body += chunk
        if len(body) > limit:
            raise HostOutputTooLarge("an answer", limit, "host_event_bytes")
    return bytes(body)


async def _read_sse(resp: aiohttp.ClientResponse, limits: Limits,
                    hold: Callable[[], asyncio.Future[None] | None] | None = None
                    ) -> AsyncIterator[list[A2AEvent]]:
    """The events of each read of the body, the reads paced by READ_PACE (and held by
    `hold`, see A2AClient.stream)."""
    parser = SseParser(max_line=limits.host_line_bytes, max_event=limits.host_event_bytes)
    content = resp.content
    connection = resp.connection
    transport = connection.transport if connection is not None else None
    streamed = 0  # the run's output so far: every event's data
    outputs = 0  # artifacts so far: reads are paced past UNPACED_OUTPUTS
    while True:
        chunk = await content.readany()
        if not chunk:
            return
        frames = parser.feed(chunk)
        kept: list[SseEvent] = []
        for frame in frames:  # what came before a limit is kept
            streamed += len(frame.data)
            if streamed > limits.run_output_bytes:
                break
            kept.append(frame)
        if kept:
            events = [_event(frame) for frame in kept]
            outputs += sum(event.type == "artifact" for event in events)
            yield events
        if streamed > limits.run_output_bytes:
            raise HostOutputTooLarge("a run's output", limits.run_output_bytes,
                                     "run_output_bytes")
        if parser.overflow is not None:
            field = "host_line_bytes" if "line" in parser.overflow.what else "host_event_bytes"
            raise HostOutputTooLarge(parser.overflow.what.replace(" of the event stream", ""),
                                     parser.overflow.limit, field)
        held = hold() if hold is not None else None
        if held is not None and held.done():
            held = None
        if (held is not None or outputs > UNPACED_OUTPUTS) and resp.connection is not None \
                and transport is not None and not transport.is_closing():
            # The kernel keeps what comes meanwhile (aiohttp's own flow control pauses the
            # parser too, which is not what is wanted here). A response already read to its
            # end has given its connection back to the pool: that one is left alone.
            transport.pause_reading()
            try:
                if held is not None:
                    await asyncio.wait((held,), timeout=HOLD_MAX)
                if outputs > UNPACED_OUTPUTS:
                    await asyncio.sleep(READ_PACE)
            finally:
                if not transport.is_closing():
                    transport.resume_reading()


def _event(frame: SseEvent) -> A2AEvent:
    try:
        doc = orjson.loads(frame.data)
    except orjson.JSONDecodeError as exc:
        raise A2AProtocolError("a streamed frame is not JSON") from exc
    event = parse_result(doc)
    if frame.event == "error" and event.type != "error":
        event = A2AEvent("error", error_message="Host reported an error")
    return event
