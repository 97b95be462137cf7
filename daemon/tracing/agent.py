"""The agent's name on its spans: the AgentCard's `name`, asked once per Host generation;
the project's folder name when no card has answered (a back-fill with no Host)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

import aiohttp

from llamon_playground.daemon.a2a.client import A2AClient, A2AUnavailable

CARD_TIMEOUT = 1.0


def project_agent_name(project_dir: Path) -> str:
    """The name a run's agent has when its card cannot be asked."""
    return project_dir.name or "agent"


def card_agent_name(http: aiohttp.ClientSession, host_url: Callable[[], tuple[int, str] | None],
                    project_dir: Path) -> Callable[[], Awaitable[str]]:
    """The name the running Host's card gives (`host_url`: its generation and URL, None when
    it is down), kept per generation; the last one known, or the project's, otherwise."""
    known: dict[int, str] = {}

    async def name() -> str:
        current = host_url()
        if current is not None and current[0] not in known:
            number, url = current
            try:
                card = await A2AClient(http, url).fetch_card(CARD_TIMEOUT)
            except A2AUnavailable:
                card = {}
            given = card.get("name")
            if isinstance(given, str) and given.strip():
                known.clear()
                known[number] = given.strip()
        return next(iter(known.values()), project_agent_name(project_dir))

    return name
