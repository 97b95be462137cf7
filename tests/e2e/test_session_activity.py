"""A session says when it was last used: `last_activity_at` in the listing and in GET
/sessions/{id} is its newest run's end (its start while it runs), else its creation; an
older session with a newer run reads newer."""

from __future__ import annotations

from typing import Any

from tests.support.api import Api


async def listed(api: Api) -> dict[str, dict[str, Any]]:
    return {s["id"]: s for s in (await api.ok("GET", "sessions?limit=1000"))["sessions"]}


async def test_last_activity_is_the_newest_runs_end(api: Api) -> None:
    older = await api.session()
    newer = await api.session()
    sessions = await listed(api)
    for sid in (older, newer):  # no run yet: its creation
        assert sessions[sid]["last_activity_at"] == sessions[sid]["created_at"]
    first = await api.wait_status(await api.start_run(older, "stream one"))
    second = await api.wait_status(await api.start_run(older, "stream two"))
    sessions = await listed(api)
    assert sessions[older]["last_activity_at"] == second["ended_at"]
    assert second["ended_at"] > first["ended_at"]
    assert sessions[older]["last_activity_at"] > sessions[newer]["last_activity_at"]
    assert sessions[newer]["last_activity_at"] == sessions[newer]["created_at"]
    one = await api.ok("GET", f"sessions/{older}")
    assert one["last_activity_at"] == second["ended_at"]
    # While a run goes on, its start is the session's last activity.
    slow = await api.start_run(newer, "slow")
    started = await api.run(slow)
    assert (await listed(api))[newer]["last_activity_at"] == started["created_at"]
    await api.call("DELETE", f"runs/{slow}")
    await api.wait_status(slow)
