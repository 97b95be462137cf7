"""The project-wide event stream: Host state changes and run status changes, live.

Low volume, so each subscriber has its own bounded queue; one that overflows is closed
(it reconnects and gets a fresh snapshot) rather than growing without bound.
"""

from __future__ import annotations

import asyncio
from typing import Any

import orjson

from llamon_playground.daemon.store.records import EventRow

QUEUE_LIMIT = 1000


def sse_frame(kind: str, data: dict[str, Any], seq: int | None = None) -> bytes:
    """One SSE frame: `kind`, `data` as JSON, and the id `seq` when given."""
    head = b"id: %d\n" % seq if seq is not None else b""
    return head + b"event: %s\ndata: %s\n\n" % (kind.encode(), orjson.dumps(data))


class ProjectEvents:
    """Fan-out of the project-wide stream; a subscriber that cannot keep up is cut off (it
    reconnects to a fresh snapshot) rather than slowing anyone else."""

    def __init__(self) -> None:
        self._subscribers: set[asyncio.Queue[bytes | None]] = set()

    def subscribe(self) -> asyncio.Queue[bytes | None]:
        """A queue of the project's event frames; None in it means the stream ends."""
        queue: asyncio.Queue[bytes | None] = asyncio.Queue(QUEUE_LIMIT)
        self._subscribers.add(queue)
        return queue

    def unsubscribe(self, queue: asyncio.Queue[bytes | None]) -> None:
        """Stop sending to `queue`."""
        self._subscribers.discard(queue)

    def _send(self, frame: bytes) -> None:
        for queue in list(self._subscribers):
            try:
                queue.put_nowait(frame)
            except asyncio.QueueFull:
                self._subscribers.discard(queue)
                queue.get_nowait()
                queue.put_nowait(None)  # tells the handler to end this stream

    def host_changed(self, status: dict[str, Any]) -> None:
        """Send the Host's new status to every subscriber."""
        self._send(sse_frame("host.state", status))

    def updated(self, kind: str, data: dict[str, Any]) -> None:
        """`run.updated` / `session.updated` (a label, note, title or metadata changed),
        `session.created` / `session.deleted`: sent after the change committed; live only,
        like host.state."""
        self._send(sse_frame(kind, data))

    def committed(self, rows: list[EventRow]) -> None:
        """Send the run status changes among committed `rows` to every subscriber."""
        if not self._subscribers:
            return
        for row in rows:
            if row[2] == "run.status":
                self._send(row[4])  # its stored frame is this stream's frame too

    def close_all(self) -> None:
        """End every subscriber's stream."""
        for queue in list(self._subscribers):
            try:
                queue.put_nowait(None)
            except asyncio.QueueFull:
                pass
        self._subscribers.clear()
