"""What the typed client streams and builds by hand: `Event`s and text parts.

The answers' and bodies' types are generated (`cli/api_types/`, `cli/api_requests.py`);
an event is parsed from the SSE frame here, so it is a class of its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from llamon_playground.cli.api_requests import TextInput
from llamon_playground.common.contract import TERMINAL_STATUSES, RunStatus
from llamon_playground.common.http_json import decimal_digits
from llamon_playground.common.sse import SseEvent


def text_part(text: str) -> TextInput:
    return {"kind": "text", "text": text}


@dataclass(frozen=True, slots=True)
class Event:
    """One streamed event: `kind` is the SSE event name (`run.status`, `output.delta`, `log`...),
    `data` its JSON object, `id` the last event id in force (a run event's `seq`): pass it
    as `after=` to pick a broken stream up where it stopped."""

    id: int | None
    kind: str
    data: dict[str, Any]

    @classmethod
    def from_sse(cls, sse: SseEvent) -> Event:
        data = orjson.loads(sse.data)
        ident = sse.id
        return cls(int(ident) if ident is not None and decimal_digits(ident) else None, sse.event,
                   data if isinstance(data, dict) else {"value": data})

    @property
    def status(self) -> RunStatus | None:
        """The run's new status, for a `run.status` event."""
        if self.kind != "run.status":
            return None
        try:
            return RunStatus(str(self.data.get("status")))
        except ValueError:
            return None

    @property
    def terminal(self) -> bool:
        """The run's last event: the daemon ends the stream after it."""
        return self.status in TERMINAL_STATUSES
