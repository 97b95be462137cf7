"""Suites through the typed client: `client.suites` (docs/suites.md).

    async with PlaygroundClient.for_project(".") as client:
        suite = await client.suites.create("smoke", [{"run_id": run_id}])
        started = await client.suites.start(suite["id"])
        async for event in client.suites.progress(started["suite_run_id"]):
            ...
        report = await client.suites.report(started["suite_run_id"])
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping, Sequence
from typing import Any, Protocol, cast

from llamon_playground.cli.api_suites import (
    Suite,
    SuiteCaseCompare,
    SuiteCaseSpec,
    SuiteCreate,
    SuiteDeleted,
    SuiteFileSaved,
    SuiteList,
    SuiteRun,
    SuiteRunAccepted,
    SuiteRunList,
    SuiteSave,
    SuiteStart,
)
from llamon_playground.cli.errors import ApiError
from llamon_playground.cli.events import Event


class Caller(Protocol):
    """What the suites need of `PlaygroundClient` (cli/client.py), which holds a
    `SuiteClient`: named here so neither module imports the other."""

    async def call(self, method: str, path: str, body: Any = None,
                   params: Mapping[str, str] | None = None) -> Any:
        """One API call; its JSON answer."""

    def events(self, path: str, params: Mapping[str, str] | None = None
               ) -> AsyncGenerator[Event, None]:
        """An SSE route's events until the daemon ends the stream."""

__all__ = ["SuiteClient", "suite_finished"]


def suite_finished(event: Event) -> bool:
    """A suite run's last event: its `suite.status` once it is not `running`."""
    return event.kind == "suite.status" and event.data.get("status") != "running"


class SuiteClient:
    """Suites and suite runs of one daemon (a view on its `PlaygroundClient`)."""

    def __init__(self, client: Caller) -> None:
        self._client = client

    async def create(self, name: str, cases: Sequence[SuiteCaseSpec], *,
                     run_on_save: bool = False) -> Suite:
        """A suite of `cases` (`{"run_id"}`, `{"run_id", "kind"}` or `{"session_id"}`)."""
        body: SuiteCreate = {"name": name, "cases": list(cases), "run_on_save": run_on_save}
        return cast(Suite, await self._client.call("POST", "/suites", body))

    async def list(self) -> SuiteList:
        return cast(SuiteList, await self._client.call("GET", "/suites"))

    async def get(self, suite_id: str) -> Suite:
        return cast(Suite, await self._client.call("GET", f"/suites/{suite_id}"))

    async def by_name(self, name: str) -> Suite:
        """The suite called `name` (404 `suite_not_found` as an ApiError when none is)."""
        for suite in (await self.list())["suites"]:
            if suite["name"] == name:
                return suite
        raise ApiError(404, {"error": "suite_not_found", "message": f"no suite named {name!r}"})

    async def update(self, suite_id: str, **fields: Any) -> Suite:
        """`name`, `run_on_save`, `baseline_suite_run_id` (make its results the baselines)."""
        return cast(Suite, await self._client.call("PATCH", f"/suites/{suite_id}", fields))

    async def delete(self, suite_id: str) -> SuiteDeleted:
        return cast(SuiteDeleted, await self._client.call("DELETE", f"/suites/{suite_id}"))

    async def start(self, suite_id: str, *, repeat: int | None = None) -> SuiteRunAccepted:
        """Run every case in the background (`repeat` times each; default the suite's);
        409 `active_run_conflict` when busy."""
        body: SuiteStart | None = {"repeat": repeat} if repeat is not None else None
        return cast(SuiteRunAccepted,
                    await self._client.call("POST", f"/suites/{suite_id}/runs", body))

    async def save(self, suite_id: str, path: str | None = None) -> SuiteFileSaved:
        """Write the suite as a file in the project (default playground/suites/NAME.json);
        from then on its baselines are kept there."""
        body: SuiteSave = {"path": path} if path else {}
        return cast(SuiteFileSaved,
                    await self._client.call("POST", f"/suites/{suite_id}/file", body))

    async def runs(self, suite_id: str) -> SuiteRunList:
        return cast(SuiteRunList, await self._client.call("GET", f"/suites/{suite_id}/runs"))

    async def report(self, suite_run_id: str) -> SuiteRun:
        return cast(SuiteRun, await self._client.call("GET", f"/suite-runs/{suite_run_id}"))

    async def cancel(self, suite_run_id: str) -> SuiteRunAccepted:
        return cast(SuiteRunAccepted,
                    await self._client.call("DELETE", f"/suite-runs/{suite_run_id}"))

    async def case(self, suite_run_id: str, case_id: str) -> SuiteCaseCompare:
        return cast(SuiteCaseCompare, await self._client.call(
            "GET", f"/suite-runs/{suite_run_id}/cases/{case_id}"))

    def progress(self, suite_run_id: str, after: int | None = None
                 ) -> AsyncGenerator[Event, None]:
        """`suite.status` and `suite.case` events after `after`, live until the run ends;
        replayed from history when it is over."""
        params = {"after": str(after)} if after is not None else None
        return self._client.events(f"/suite-runs/{suite_run_id}/events", params)
