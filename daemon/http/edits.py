"""Names and lineage: edit a session or a run after the fact, and a run's lineage.

    PATCH /api/playground/v1/sessions/{session_id}   {"title"?, "metadata"?} → session
    PATCH /api/playground/v1/runs/{run_id}           {"label"?, "note"?} → run
    GET   /api/playground/v1/runs/{run_id}/lineage   resume chain and rerun tree
"""

from __future__ import annotations

from aiohttp import web

from llamon_playground.common.contract import API_PREFIX
from llamon_playground.common.http_json import json_response
from llamon_playground.daemon.data.edits import parse_run_fields, parse_session_fields
from llamon_playground.daemon.data.redact import redact_metadata
from llamon_playground.daemon.errors import NotFound
from llamon_playground.daemon.http.util import read_json
from llamon_playground.daemon.services import SERVICES
from llamon_playground.daemon.store import history
from llamon_playground.daemon.store.lineage import lineage

PREFIX = API_PREFIX


async def patch_session(request: web.Request) -> web.Response:
    s = request.app[SERVICES]
    session_id = request.match_info["session_id"]
    # Validated in full before anything is written: a refused edit changes nothing.
    fields = parse_session_fields(await read_json(request, s.settings.max_request_bytes),
                                  s.settings.limits)
    if "metadata" in fields:
        fields["metadata"] = redact_metadata(fields["metadata"])
    session = await history.update_session(s.store, session_id, fields)
    if session is None:
        raise NotFound(f"no session {session_id}", code="session_not_found")
    if fields:
        s.project_events.updated("session.updated", {
            "session_id": session_id, "fields": sorted(fields), "session": session})
    return json_response(session)


async def patch_run(request: web.Request) -> web.Response:
    s = request.app[SERVICES]
    run_id = request.match_info["run_id"]
    fields = parse_run_fields(await read_json(request, s.settings.max_request_bytes))
    # Only the run's own columns: the active run's status and output stay the run's to write.
    run = await history.update_run_fields(s.store, run_id, fields)
    if run is None:
        raise NotFound(f"no run {run_id}", code="run_not_found")
    if fields:
        s.project_events.updated("run.updated", {
            "run_id": run_id, "session_id": run["session_id"], "fields": sorted(fields),
            "label": run["label"], "note": run["note"]})
    return json_response(run)


async def get_lineage(request: web.Request) -> web.Response:
    run_id = request.match_info["run_id"]
    answer = await lineage(request.app[SERVICES].store, run_id)
    if answer is None:
        raise NotFound(f"no run {run_id}", code="run_not_found")
    return json_response(answer)


def add_edit_routes(app: web.Application) -> None:
    r = app.router
    r.add_patch(PREFIX + "/sessions/{session_id}", patch_session)
    r.add_patch(PREFIX + "/runs/{run_id}", patch_run)
    r.add_get(PREFIX + "/runs/{run_id}/lineage", get_lineage)
