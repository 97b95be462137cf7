"""One run of the Host process, from spawn to exit: what status and runs need to know."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from llamon_playground.host_manager.environment import local_url
from llamon_playground.host_manager.watch.fingerprint import Fingerprint


@dataclass
class Generation:
    """One Host process from spawn to exit: a restart is a new generation with its own number,
    port and capture token, so nothing from an old one is mistaken for the current one."""

    number: int
    pid: int
    port: int
    started_at: float
    create_time: float
    token: str = field(repr=False)  # this generation's capture token
    fingerprint: Fingerprint = field(repr=False)  # the watched files it started with
    start_mode: str = "cold"  # "warm": forked from the warm parent
    start_reason: str | None = None  # why that mode (docs/host.md)
    marker: str | None = None  # what its environment block says under ENV_MARKER
    ready_at: float | None = None
    ready_mono: float | None = None
    # The agent card it served when it got Ready (None when too big to keep): a run's send
    # reads its interface from it instead of asking a Host that has just started again.
    card: bytes | None = field(default=None, repr=False)
    exit_code: int | None = None

    @property
    def url(self) -> str:
        """The generation's local URL."""
        return local_url(self.port)


def generation_status(gen: Generation | None, *, running: bool, ready: bool) -> dict[str, Any]:
    """The latest generation's part of GET /host: a pid only while its process runs, a URL
    only while it is Ready."""
    alive = gen is not None and gen.exit_code is None and running
    return {"pid": gen.pid if gen and alive else None,
            "url": gen.url if gen and ready else None,
            "started_at": gen.started_at if gen else None,
            "ready_at": gen.ready_at if gen else None,
            "start_mode": gen.start_mode if gen else None,
            "start_reason": gen.start_reason if gen else None}
