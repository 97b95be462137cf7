"""The daemon's HTTP surface on its Unix socket: /health, sessions and runs (under
/api/playground/v1), and the middleware that turns errors into answers."""

from __future__ import annotations

import logging
import os
import sqlite3
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web
from aiohttp.typedefs import Middleware

from llamon_playground.common.config import Settings
from llamon_playground.common.contract import API_PREFIX, TERMINAL_STATUSES
from llamon_playground.common.http_json import (
    error_response,
    http_error_response,
    json_response,
    public_reason,
)
from llamon_playground.common.platform import current as current_platform
from llamon_playground.daemon.data.edits import parse_session_fields
from llamon_playground.daemon.errors import ApiError, StoreError
from llamon_playground.daemon.http.data import part_content
from llamon_playground.daemon.http.sse import parse_cursor, prepare_stream, stream_run
from llamon_playground.daemon.http.util import (
    bind,
    choice_query,
    int_query,
    limit_query,
    read_object,
)
from llamon_playground.daemon.runs.manager import RunManager
from llamon_playground.daemon.store.database import Store
from llamon_playground.daemon.store.event_log import EventHub
from llamon_playground.daemon.store.history_service import HistoryService
from llamon_playground.daemon.store.upkeep.trimmer import Trimmer
from llamon_playground.host_manager.supervisor import HostSupervisor

log = logging.getLogger(__name__)

PREFIX = API_PREFIX
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def errors_middleware(store: Store) -> Middleware:
    """Every error as a JSON answer; the first Playground API use opens (creates) history."""
    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        try:
            if request.path.startswith(PREFIX + "/"):
                # First Playground API use creates .llamon/ (never /health).
                await store.open()
            return await handler(request)
        except ApiError as exc:
            return json_error(exc)
        except web.HTTPException as exc:
            if exc.status >= 400:
                return http_error_response(exc)
            raise
        except (StoreError, sqlite3.Error, OSError) as exc:
            # The disk or the database refused: say so, keep serving, change nothing. The
            # log has the whole error; the answer has its reason without the machine's paths.
            log.warning("history unavailable on %s %s: %s", request.method, request.path, exc)
            return error_response(503, "history_unavailable", "the history database cannot "
                                  f"be used right now: {public_reason(exc.__cause__ or exc)}")
        except Exception:
            log.exception("unhandled error on %s %s", request.method, request.path)
            return error_response(500, "internal_error",
                                  "the daemon failed to answer; see its log")
    return middleware


def json_error(exc: ApiError) -> web.Response:
    return json_response({"detail": exc.detail()}, exc.status)


MAX_PAGE = 1000
RUN_ORDERS = ("oldest", "newest")  # sessions, a session's runs: creation order, or newest first


class RunRoutes:
    """/health, sessions and runs: each handler parses, calls a service, renders."""

    def __init__(self, settings: Settings, store: Store, hub: EventHub, history: HistoryService,
                 runs: RunManager, host: HostSupervisor, trimmer: Trimmer,
                 tracing: Callable[[], dict[str, Any]]) -> None:
        self._tracing = tracing  # trace export's state and counts
        self._settings = settings
        self._store = store
        self._hub = hub
        self._history = history
        self._runs = runs
        self._host = host
        self._trimmer = trimmer

    async def _body(self, request: web.Request) -> Any:
        return await read_object(request, self._settings.max_request_bytes)

    # -- health -------------------------------------------------------------------------------

    async def health(self, request: web.Request) -> web.Response:
        store, settings = self._store, self._settings
        database = ("unsupported" if store.unsupported_version is not None
                    else "open" if store.is_open else "not_opened")
        active = self._runs.active
        return json_response({"status": "ok", "version": settings.version, "pid": os.getpid(),
                              "project": str(settings.project_dir), "database": database,
                              "host": self._host.status(),
                              "active_run_id": active.run_id if active else None,
                              "history_degraded": store.degraded,
                              "history": self._trimmer.summary(),
                              "tracing": self._tracing(),
                              "platform": current_platform().name})

    # -- sessions -----------------------------------------------------------------------------

    async def list_sessions(self, request: web.Request) -> web.Response:
        sessions, cursor = await self._history.list_sessions(
            int_query(request, "after", 0, 2**62),
            limit_query(request, 100, MAX_PAGE),
            newest_first=choice_query(request, "order", RUN_ORDERS) == "newest")
        return json_response({"sessions": sessions, "next_after": cursor})

    async def get_session(self, request: web.Request) -> web.Response:
        return json_response(await self._history.session(request.match_info["session_id"]))

    async def create_session(self, request: web.Request) -> web.Response:
        body = await self._body(request)
        if isinstance(body, dict) and body.get("metadata") is None:
            body.pop("metadata", None)  # null metadata is an empty object, as it always was
        fields = parse_session_fields({} if body is None else body, self._settings.limits)
        return json_response(await self._history.create_session(fields), 201)

    # -- runs ---------------------------------------------------------------------------------

    async def list_runs(self, request: web.Request) -> web.Response:
        runs, cursor = await self._history.list_runs(
            request.match_info["session_id"], int_query(request, "after", 0, 2**62),
            limit_query(request, 100, MAX_PAGE),
            newest_first=choice_query(request, "order", RUN_ORDERS) == "newest")
        return json_response({"runs": runs, "next_after": cursor})

    async def create_run(self, request: web.Request) -> web.Response:
        body = await self._body(request)
        return json_response(await self._runs.create(request.match_info["session_id"], body),
                             202)

    async def get_run(self, request: web.Request) -> web.Response:
        return json_response(await self._runs.view(request.match_info["run_id"]))

    async def cancel_run(self, request: web.Request) -> web.Response:
        return json_response(await self._runs.cancel(request.match_info["run_id"]))

    async def resume_run(self, request: web.Request) -> web.Response:
        body = await self._body(request)
        return json_response(await self._runs.resume(request.match_info["run_id"], body), 202)

    async def rerun_run(self, request: web.Request) -> web.Response:
        body = await self._body(request)
        return json_response(await self._runs.rerun(request.match_info["run_id"], body), 202)

    async def part_content(self, request: web.Request) -> web.StreamResponse:
        return await part_content(self._history, request)

    async def run_events(self, request: web.Request) -> web.StreamResponse:
        run_id = request.match_info["run_id"]
        cursor = parse_cursor(request)
        live = self._hub.get(run_id)
        if live is not None and not live.closed:
            # A live run (one just created): its log answers, no history read on the way
            # to its first output.
            terminal = False
        else:
            run = await self._history.run(run_id)
            terminal = run["status"] in TERMINAL_STATUSES
        if terminal and not await self._store.events_after(run_id, cursor, 1):
            # A finished run with nothing after the cursor: 204 tells an EventSource to stop.
            return web.Response(status=204)
        response = await prepare_stream(request)
        try:
            await stream_run(response, self._store, self._hub, run_id, cursor,
                             run_is_terminal=terminal,
                             keepalive=self._settings.keepalive_interval)
        except (ConnectionResetError, ConnectionError):
            pass  # the client left; the run goes on
        return response


def add_routes(app: web.Application, *, settings: Settings, store: Store, hub: EventHub,
               history: HistoryService, runs: RunManager, host: HostSupervisor,
               trimmer: Trimmer, tracing: Callable[[], dict[str, Any]]) -> None:
    """Route health, sessions and runs (create, read, cancel, resume, rerun, events)."""
    routes = RunRoutes(settings, store, hub, history, runs, host, trimmer, tracing)
    bind(app, "runs", routes)
