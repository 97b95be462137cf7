"""The daemon's HTTP surface on its Unix socket: /health and /api/playground/v1/*."""

from __future__ import annotations

import logging
import os
import sqlite3
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from aiohttp import web

from llamon_playground.common.contract import API_PREFIX, TERMINAL_STATUSES
from llamon_playground.common.http_json import (
    error_response,
    http_error_response,
    json_response,
    public_reason,
)
from llamon_playground.daemon.data.edits import parse_session_fields
from llamon_playground.daemon.data.redact import redact_metadata
from llamon_playground.daemon.errors import ApiError, BadRequest, NotFound, StoreError
from llamon_playground.daemon.http.sse import parse_cursor, prepare_stream, stream_run
from llamon_playground.daemon.http.util import choice_query, int_query, read_object
from llamon_playground.daemon.services import SERVICES, Services
from llamon_playground.daemon.store import history
from llamon_playground.host_manager.fingerprint import OutsideProject, project_file

log = logging.getLogger(__name__)

PREFIX = API_PREFIX
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@web.middleware
async def errors_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        if request.path.startswith(PREFIX + "/"):
            # First Playground API use creates .llamon/ (never /health).
            await request.app[SERVICES].store.open()
        return await handler(request)
    except ApiError as exc:
        return json_error(exc)
    except web.HTTPException as exc:
        if exc.status >= 400:
            return http_error_response(exc)
        raise
    except (StoreError, sqlite3.Error, OSError) as exc:
        # The disk or the database refused: say so, keep serving, change nothing. The log
        # has the whole error; the answer has its reason without the machine's paths.
        log.warning("history unavailable on %s %s: %s", request.method, request.path, exc)
        return error_response(503, "history_unavailable", "the history database cannot be "
                              f"used right now: {public_reason(exc.__cause__ or exc)}")
    except Exception:
        log.exception("unhandled error on %s %s", request.method, request.path)
        return error_response(500, "internal_error", "the daemon failed to answer; see its log")


def json_error(exc: ApiError) -> web.Response:
    return json_response({"detail": exc.detail()}, exc.status)


def svc(request: web.Request) -> Services:
    return request.app[SERVICES]


async def body_of(request: web.Request) -> Any:
    return await read_object(request, svc(request).settings.max_request_bytes)


# -- health -----------------------------------------------------------------------------------

async def health(request: web.Request) -> web.Response:
    s = svc(request)
    database = ("unsupported" if s.store.unsupported_version is not None
                else "open" if s.store.is_open else "not_opened")
    active = s.runs.active
    return json_response({"status": "ok", "version": s.settings.version, "pid": os.getpid(),
                          "project": str(s.settings.project_dir), "database": database,
                          "host": s.host.status(),
                          "active_run_id": active.run_id if active else None,
                          "history_degraded": s.store.degraded,
                          "history": s.trimmer.summary()})


# -- sessions ---------------------------------------------------------------------------------

MAX_PAGE = 1000
RUN_ORDERS = ("oldest", "newest")  # a session's runs: creation order, or newest first


async def list_sessions(request: web.Request) -> web.Response:
    sessions, cursor = await history.list_sessions(
        svc(request).store, int_query(request, "after", 0, 2**62),
        int_query(request, "limit", 100, MAX_PAGE, minimum=1))
    return json_response({"sessions": sessions, "next_after": cursor})


async def create_session(request: web.Request) -> web.Response:
    body = await body_of(request)
    if isinstance(body, dict) and body.get("metadata") is None:
        body.pop("metadata", None)  # null metadata is an empty object, as it always was
    fields = parse_session_fields({} if body is None else body)
    session = await history.create_session(svc(request).store, fields.get("title", ""),
                                            redact_metadata(fields.get("metadata", {})))
    return json_response(session, 201)


# -- runs -------------------------------------------------------------------------------------

async def list_runs(request: web.Request) -> web.Response:
    s = svc(request)
    session_id = request.match_info["session_id"]
    if await history.get_session(s.store, session_id) is None:
        raise NotFound(f"no session {session_id}", code="session_not_found")
    runs, cursor = await history.list_runs(
        s.store, session_id, int_query(request, "after", 0, 2**62),
        int_query(request, "limit", 100, MAX_PAGE, minimum=1),
        newest_first=choice_query(request, "order", RUN_ORDERS) == "newest")
    return json_response({"runs": runs, "next_after": cursor})


async def create_run(request: web.Request) -> web.Response:
    body = await body_of(request)
    refuse_ways_out(svc(request).settings.project_dir, body)
    answer = await svc(request).runs.create(request.match_info["session_id"], body)
    return json_response(answer, 202)


async def get_run(request: web.Request) -> web.Response:
    run_id = request.match_info["run_id"]
    s = svc(request)
    run = await history.get_run(s.store, run_id)
    if run is None:
        raise NotFound(f"no run {run_id}", code="run_not_found")
    active = s.runs.active
    if active is not None and active.run_id == run_id and run["status"] != active.status \
            and active.status not in TERMINAL_STATUSES:
        # History is behind (degraded writes): the daemon's own view is the truth. An
        # ending shows only once committed, with its whole record (output, ended_at).
        run["status"] = active.status.value
        run["history_behind"] = True
    return json_response(run)


async def cancel_run(request: web.Request) -> web.Response:
    return json_response(await svc(request).runs.cancel(request.match_info["run_id"]))


async def resume_run(request: web.Request) -> web.Response:
    body = await body_of(request)
    refuse_ways_out(svc(request).settings.project_dir, body)
    answer = await svc(request).runs.resume(request.match_info["run_id"], body)
    return json_response(answer, 202)


def refuse_ways_out(project_dir: Path, body: Any) -> None:
    """400 invalid_changed_files for a changed file that resolves outside the project or is
    not a regular file: nothing outside the project is ever hashed, compiled or recorded.
    (The shape of `changed_files` is the run request parser's to check.)"""
    files = body.get("changed_files") if isinstance(body, dict) else None
    for rel in files if isinstance(files, list) else []:
        if not isinstance(rel, str) or not rel or rel.startswith("/") or "\x00" in rel:
            continue
        try:
            project_file(project_dir, rel)
        except OutsideProject as exc:
            raise BadRequest(f"changed file {exc}", code="invalid_changed_files") from exc


async def rerun_run(request: web.Request) -> web.Response:
    answer = await svc(request).runs.rerun(request.match_info["run_id"], await body_of(request))
    return json_response(answer, 202)


async def run_events(request: web.Request) -> web.StreamResponse:
    s = svc(request)
    run_id = request.match_info["run_id"]
    cursor = parse_cursor(request)
    run = await history.get_run(s.store, run_id)
    if run is None:
        raise NotFound(f"no run {run_id}", code="run_not_found")
    terminal = run["status"] in TERMINAL_STATUSES
    if terminal and not await s.store.events_after(run_id, cursor, 1):
        # A finished run with nothing after the cursor: 204 tells an EventSource to stop.
        return web.Response(status=204)
    response = await prepare_stream(request)
    try:
        await stream_run(response, s.store, s.hub, run_id, cursor,
                         run_is_terminal=terminal,
                         keepalive=s.settings.keepalive_interval)
    except (ConnectionResetError, ConnectionError):
        pass  # the client left; the run goes on
    return response


def add_routes(app: web.Application) -> None:
    r = app.router
    r.add_get("/health", health)
    r.add_get(PREFIX + "/sessions", list_sessions)
    r.add_post(PREFIX + "/sessions", create_session)
    r.add_get(PREFIX + "/sessions/{session_id}/runs", list_runs)
    r.add_post(PREFIX + "/sessions/{session_id}/runs", create_run)
    r.add_get(PREFIX + "/runs/{run_id}", get_run)
    r.add_delete(PREFIX + "/runs/{run_id}", cancel_run)
    r.add_post(PREFIX + "/runs/{run_id}/resume", resume_run)
    r.add_post(PREFIX + "/runs/{run_id}/rerun", rerun_run)
    r.add_get(PREFIX + "/runs/{run_id}/events", run_events)
