"""Host control and the project-wide event stream (under /api/playground/v1)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable

from aiohttp import web

from llamon_playground.common.contract import API_PREFIX
from llamon_playground.common.http_json import json_response
from llamon_playground.daemon.errors import Conflict
from llamon_playground.daemon.http.sse import KEEPALIVE, last_event_id, prepare_stream
from llamon_playground.daemon.http.util import int_query, limit_query
from llamon_playground.daemon.services import SERVICES, Services
from llamon_playground.daemon.store.project_events import sse_frame
from llamon_playground.host_manager.errors import HostUnavailable

PREFIX = API_PREFIX
MAX_LOG_LIMIT = 5000


def svc(request: web.Request) -> Services:
    return request.app[SERVICES]


def full_status(s: Services) -> dict[str, object]:
    return {**s.host.status(), "watch": s.reload.stats()}


async def host_status(request: web.Request) -> web.Response:
    return json_response(full_status(svc(request)))


async def _started(s: Services, action: Awaitable[object]) -> web.Response:
    """Run a start/restart; a Host that cannot come up answers 503 with its log tail."""
    try:
        await action
    except HostUnavailable as exc:
        return json_response({"detail": {"error": exc.reason, "message": exc.message,
                                         "log_tail": exc.log_tail}}, 503)
    return json_response(full_status(s))


async def host_start(request: web.Request) -> web.Response:
    s = svc(request)
    return await _started(s, s.host.start())


async def host_stop(request: web.Request) -> web.Response:
    s = svc(request)
    _refuse_during_run(s, "stop")
    await s.host.stop()
    return json_response(full_status(s))


async def host_restart(request: web.Request) -> web.Response:
    s = svc(request)
    _refuse_during_run(s, "restart")
    return await _started(s, s.host.restart())


def _refuse_during_run(s: Services, action: str) -> None:
    active = s.runs.active
    if active is not None:
        raise Conflict(f"cannot {action} the Host while a run is active; cancel it first",
                       code="active_run_conflict", active_run_id=active.run_id)


async def host_logs(request: web.Request) -> web.StreamResponse:
    s = svc(request)
    after = int_query(request, "after", 0, 10**12)
    limit = limit_query(request, 500, MAX_LOG_LIMIT)
    resume = resume_offset(request)  # checked either way: a bad header is a 400, not ignored
    if request.query.get("follow") not in ("1", "true"):
        lines, overflow = s.host.logs.after(after, limit)
        return json_response({"lines": [ln.as_dict() for ln in lines], "overflow": overflow,
                              "next": lines[-1].offset + 1 if lines else after})
    cursor = max(after, resume)
    if cursor > s.host.logs.next_offset:
        # No line has that offset yet: the cursor is from before the daemon restarted (each
        # daemon numbers its lines from 0). Every line this one kept is new to the client.
        cursor = 0
    response = await prepare_stream(request)
    try:
        while True:
            lines, overflow = s.host.logs.after(cursor, MAX_LOG_LIMIT)
            if overflow:
                await response.write(sse_frame("log.overflow", {"from": cursor}))
            if lines:
                await response.write(b"".join(sse_frame("log", ln.as_dict(), ln.offset)
                                              for ln in lines))
                cursor = lines[-1].offset + 1
                continue
            if not await s.host.logs.wait_after(cursor, s.settings.keepalive_interval):
                await response.write(KEEPALIVE)
    except ConnectionError:
        pass
    return response


def resume_offset(request: web.Request) -> int:
    """Where a browser's reconnect resumes: the line after its Last-Event-ID (the offset of
    the last line it got); 0 without the header. The route starts at the larger of this and
    `?after=`, as a run's stream takes the larger cursor (docs/api.md, "Events (SSE)")."""
    last = last_event_id(request)
    return 0 if last is None else last + 1


async def project_events(request: web.Request) -> web.StreamResponse:
    s = svc(request)
    queue = s.project_events.subscribe()
    response = await prepare_stream(request)
    try:
        active = s.runs.active
        await response.write(sse_frame("host.state", s.host.status())
                             + sse_frame("run.active", {"run_id": active.run_id if active
                                                        else None}))
        while True:
            try:
                frame = await _next(queue, s.settings.keepalive_interval)
            except TimeoutError:
                await response.write(KEEPALIVE)
                continue
            if frame is None:
                break
            await response.write(frame)
    except ConnectionError:
        pass
    finally:
        s.project_events.unsubscribe(queue)
    return response


async def _next(queue: asyncio.Queue[bytes | None], timeout: float) -> bytes | None:
    return await asyncio.wait_for(queue.get(), timeout)


def add_host_routes(app: web.Application) -> None:
    r = app.router
    r.add_get(PREFIX + "/host", host_status)
    r.add_post(PREFIX + "/host/start", host_start)
    r.add_post(PREFIX + "/host/stop", host_stop)
    r.add_post(PREFIX + "/host/restart", host_restart)
    r.add_get(PREFIX + "/host/logs", host_logs)
    r.add_get(PREFIX + "/events", project_events)

