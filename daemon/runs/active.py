"""What the daemon holds in memory about the one active run."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

from llamon_playground.daemon.a2a.client import A2AClient
from llamon_playground.daemon.a2a.wire import Interface
from llamon_playground.daemon.data.parts import RunRequest
from llamon_playground.daemon.runs.state import RunStatus


@dataclass
class ActiveRun:
    run_id: str
    session_id: str
    context_id: str
    request: RunRequest
    task_id: str | None = None  # the Host's A2A task id (a resume starts with the parent's)
    parent_run_id: str | None = None
    status: RunStatus = RunStatus.QUEUED
    cancel_reason: str | None = None
    finalized: bool = False
    started_mono: float = field(default_factory=time.monotonic)
    task: asyncio.Task[None] | None = None
    generation: int | None = None
    host_checked: bool = False  # past the start/restart phase: its own save was applied
    # Set once the send phase reached the Host: what a cancel needs to ask it to stop.
    client: A2AClient | None = None
    interface: Interface | None = None
