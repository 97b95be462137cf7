"""Host control and the project-wide event stream (under /api/playground/v1)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable

from aiohttp import web

from llamon_playground.common.config import Settings
from llamon_playground.common.http_json import json_response
from llamon_playground.common.platform import current as current_platform
from llamon_playground.daemon.http.sse import KEEPALIVE, last_event_id, prepare_stream
from llamon_playground.daemon.http.util import bind, int_query, limit_query
from llamon_playground.daemon.runs.manager import RunManager
from llamon_playground.daemon.runs.reload import HostControl, ReloadCoordinator
from llamon_playground.daemon.store.event_log import ProjectEvents, sse_frame
from llamon_playground.host_manager.errors import HostUnavailable
from llamon_playground.host_manager.supervisor import HostSupervisor

MAX_LOG_LIMIT = 5000


class HostRoutes:
    """Host control, its log, and the project-wide event stream."""

    def __init__(self, settings: Settings, host: HostSupervisor, control: HostControl,
                 runs: RunManager, reload: ReloadCoordinator,
                 project_events: ProjectEvents) -> None:
        self._settings = settings
        self._host = host
        self._control = control
        self._runs = runs
        self._reload = reload
        self._project_events = project_events

    def full_status(self) -> dict[str, object]:
        return {**self._host.status(), "watch": self._reload.stats(),
                "platform": current_platform().name}

    async def host_status(self, request: web.Request) -> web.Response:
        return json_response(self.full_status())

    async def _started(self, action: Awaitable[object]) -> web.Response:
        """Run a start/restart; a Host that cannot come up answers 503 with its log tail."""
        try:
            await action
        except HostUnavailable as exc:
            return json_response({"detail": {"error": exc.reason, "message": exc.message,
                                             "log_tail": exc.log_tail}}, 503)
        return json_response(self.full_status())

    async def host_start(self, request: web.Request) -> web.Response:
        return await self._started(self._control.start())

    async def host_stop(self, request: web.Request) -> web.Response:
        await self._control.stop()
        return json_response(self.full_status())

    async def host_restart(self, request: web.Request) -> web.Response:
        return await self._started(self._control.restart())

    async def host_logs(self, request: web.Request) -> web.StreamResponse:
        logs = self._host.logs
        after = int_query(request, "after", 0, 10**12)
        limit = limit_query(request, 500, MAX_LOG_LIMIT)
        resume = resume_offset(request)  # checked either way: a bad header is a 400
        if request.query.get("follow") not in ("1", "true"):
            lines, overflow = logs.after(after, limit)
            return json_response({"lines": [ln.as_dict() for ln in lines],
                                  "overflow": overflow,
                                  "next": lines[-1].offset + 1 if lines else after})
        cursor = max(after, resume)
        if cursor > logs.next_offset:
            # No line has that offset yet: the cursor is from before the daemon restarted
            # (each daemon numbers its lines from 0). Every line this one kept is new to the
            # client.
            cursor = 0
        response = await prepare_stream(request)
        try:
            while True:
                lines, overflow = logs.after(cursor, MAX_LOG_LIMIT)
                if overflow:
                    await response.write(sse_frame("log.overflow", {"from": cursor}))
                if lines:
                    await response.write(b"".join(sse_frame("log", ln.as_dict(), ln.offset)
                                                  for ln in lines))
                    cursor = lines[-1].offset + 1
                    continue
                if not await logs.wait_after(cursor, self._settings.keepalive_interval):
                    await response.write(KEEPALIVE)
        except ConnectionError:
            pass
        return response

    async def project_events(self, request: web.Request) -> web.StreamResponse:
        queue = self._project_events.subscribe()
        response = await prepare_stream(request)
        try:
            active = self._runs.active
            await response.write(sse_frame("host.state", self._host.status())
                                 + sse_frame("run.active", {"run_id": active.run_id if active
                                                            else None}))
            while True:
                try:
                    frame = await _next(queue, self._settings.keepalive_interval)
                except TimeoutError:
                    await response.write(KEEPALIVE)
                    continue
                if frame is None:
                    break
                await response.write(frame)
        except ConnectionError:
            pass
        finally:
            self._project_events.unsubscribe(queue)
        return response


def resume_offset(request: web.Request) -> int:
    """Where a browser's reconnect resumes: the line after its Last-Event-ID (the offset of
    the last line it got); 0 without the header. The route starts at the larger of this and
    `?after=`, as a run's stream takes the larger cursor (docs/api.md, "Events (SSE)")."""
    last = last_event_id(request)
    return 0 if last is None else last + 1


async def _next(queue: asyncio.Queue[bytes | None], timeout: float) -> bytes | None:
    return await asyncio.wait_for(queue.get(), timeout)


def add_host_routes(app: web.Application, *, settings: Settings, host: HostSupervisor,
                    runs: RunManager, reload: ReloadCoordinator,
                    project_events: ProjectEvents) -> None:
    """Route the Host's status, start, stop, restart and logs, and the project's event stream."""
    routes = HostRoutes(settings, host, HostControl(host, runs), runs, reload, project_events)
    bind(app, "host", routes)

