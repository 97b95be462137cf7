"""The data routes: files, compare, bundles and "delete all history" (docs/storage.md).

    GET    /api/playground/v1/files/{sha256}     a stored blob, always as an attachment
    GET    /api/playground/v1/compare?left=&right=
    POST   /api/playground/v1/bundles/export     {session_ids?, run_ids?} → bundle
    POST   /api/playground/v1/bundles/import     {"bundle": ...} or the bundle → 201 ID map
    DELETE /api/playground/v1/sessions           every session, run, event, unreferenced blob
"""

from __future__ import annotations

import asyncio
import re
from urllib.parse import quote

from aiohttp import web

from llamon_playground.common.contract import API_PREFIX
from llamon_playground.common.http_json import json_response
from llamon_playground.daemon.data.big_documents import collector_paused, dismantle
from llamon_playground.daemon.data.bundle_json import (
    check_value_budget,
    dump_bundle,
    parse_bundle_body,
)
from llamon_playground.daemon.data.bundles import export_bundle, import_bundle, parse_selection
from llamon_playground.daemon.data.compare import compare_runs
from llamon_playground.daemon.errors import BadRequest, Conflict, NotFound
from llamon_playground.daemon.http.util import read_body, read_object
from llamon_playground.daemon.services import SERVICES, Services
from llamon_playground.daemon.store import history

PREFIX = API_PREFIX
# A bundle carries its files as base64 (4/3 of their size), so it needs more than the
# default 16 MiB body limit; the validator's own limits (160 MiB of blobs) fit inside.
MAX_IMPORT_BYTES = 256 * 1024 * 1024
WRITE_SLICE = 1 << 20  # bytes of an export's answer handed to the transport at once
# Import and "delete all" both add or unlink blobs around their transaction; taking turns
# keeps one from unlinking a blob the other has just written and is about to reference.
BLOB_CHANGES = web.AppKey("data_blob_changes", asyncio.Lock)
_MIME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*$")


def _svc(request: web.Request) -> Services:
    return request.app[SERVICES]


async def get_file(request: web.Request) -> web.StreamResponse:
    s = _svc(request)
    sha = request.match_info["sha256"]
    path = s.blobs.path_for(sha)  # 404 file_not_found unless 64 lowercase hex digits
    part = await history.find_file_part(s.store, sha)
    if part is None or not path.is_file():
        raise NotFound(f"no stored file {sha}", code="file_not_found")
    mime = part.get("mime")
    if not isinstance(mime, str) or not _MIME.match(mime):
        mime = "application/octet-stream"
    # Attachment, nosniff and a sandbox CSP: an uploaded HTML file is never rendered inline.
    return web.FileResponse(path, headers={
        "Content-Type": mime,
        "Content-Disposition": content_disposition(part.get("name"), sha),
        "X-Content-Type-Options": "nosniff",
        "Content-Security-Policy": "sandbox",
        "Cache-Control": "no-store",  # user content: keep it out of browser caches
    })


def content_disposition(name: object, sha: str) -> str:
    """`attachment` with an ASCII fallback name and the UTF-8 original (RFC 6266/5987)."""
    filename = name if isinstance(name, str) and name.strip() else sha
    filename = filename.replace("\\", "/").rsplit("/", 1)[-1] or sha
    ascii_name = re.sub(r"[^A-Za-z0-9._ -]", "_", filename)[:200] or sha
    return f"attachment; filename=\"{ascii_name}\"; filename*=UTF-8''{quote(filename, safe='')}"


async def compare(request: web.Request) -> web.Response:
    store = _svc(request).store
    ids = {side: request.query.get(side, "") for side in ("left", "right")}
    if not all(ids.values()):
        raise BadRequest("give both run ids: ?left=<run_id>&right=<run_id>",
                         code="invalid_request")
    runs = {}
    for side, run_id in ids.items():
        run = await history.get_run(store, run_id)
        if run is None:
            raise NotFound(f"no run {run_id} ({side})", code="run_not_found", side=side)
        runs[side] = run
    # Off the loop: the diff work is capped, but two large runs still take a while to walk.
    return json_response(await asyncio.to_thread(compare_runs, runs["left"], runs["right"]))


async def export(request: web.Request) -> web.StreamResponse:
    s = _svc(request)
    session_ids, run_ids = parse_selection(
        await read_object(request, s.settings.max_request_bytes))
    with collector_paused():  # the bundle is millions of objects: see big_documents
        bundle = await export_bundle(s.settings.db_path, s.blobs, session_ids, run_ids)
        try:
            body = await asyncio.to_thread(dump_bundle, bundle)  # up to ~200 MB: off the loop
        finally:
            await asyncio.to_thread(dismantle, bundle)
            del bundle  # gone before the collector is back on
    await asyncio.to_thread(check_value_budget, body)
    # Written a slice at a time: handed to the transport whole, what the socket did not take
    # at once was copied into its buffer in one go on the loop's thread (~100 ms for 200 MB).
    response = web.StreamResponse(headers={"Content-Type": "application/json"})
    response.content_length = len(body)
    await response.prepare(request)
    view = memoryview(body)
    try:
        for start in range(0, len(body), WRITE_SLICE):
            await response.write(view[start:start + WRITE_SLICE])
        await response.write_eof()
    except ConnectionError:
        pass  # the client left mid-download; nothing to undo
    return response


async def import_(request: web.Request) -> web.Response:
    s = _svc(request)
    raw = await read_body(request, MAX_IMPORT_BYTES)
    with collector_paused():  # see big_documents
        # Off the loop: counted before parsing, parsed with room for other requests.
        body = await asyncio.to_thread(parse_bundle_body, raw)
        del raw  # the parsed bundle is all the import needs from here
        try:
            async with request.app[BLOB_CHANGES]:
                mapping = await import_bundle(s.store, s.blobs, body, s.settings.limits)
        finally:
            del body  # emptied by the import: gone before the collector is back on
    return json_response(mapping, 201)


async def delete_all(request: web.Request) -> web.Response:
    s = _svc(request)
    async with request.app[BLOB_CHANGES]:
        active = s.runs.active  # checked with no await before the delete is queued
        if active is not None:
            raise Conflict("a run is active; cancel it or wait for it to end",
                           code="active_run_conflict", active_run_id=active.run_id)
        counts, shas = await history.delete_all_history(s.store)
        removed = await _unlink_unreferenced(s, shas)
    return json_response({"deleted": counts, "blobs_removed": removed})


async def delete_session(request: web.Request) -> web.Response:
    s = _svc(request)
    session_id = request.match_info["session_id"]
    async with request.app[BLOB_CHANGES]:
        if await history.get_session(s.store, session_id) is None:
            raise NotFound(f"no session {session_id}", code="session_not_found")
        active = s.runs.active
        if active is not None and active.session_id == session_id:
            raise Conflict("the session holds the active run", code="active_run_conflict",
                           active_run_id=active.run_id)
        shas = await history.delete_session(s.store, session_id)
        removed = await _unlink_unreferenced(s, shas)
    return json_response({"deleted": session_id, "blobs_removed": removed})


async def _unlink_unreferenced(s: Services, shas: list[str]) -> int:
    """After the commit, unlink only blobs nothing references by now: a run may have started
    meanwhile, its input files written but not yet recorded. A crash in between leaves an
    unreferenced blob, never a hole."""
    orphans = await history.unreferenced(s.store, shas)
    starting = s.runs.active
    keep = {p.get("sha256") for p in starting.request.parts} if starting else set()
    orphans = [sha for sha in orphans if sha not in keep]
    for sha in orphans:
        s.blobs.unlink(sha)
    return len(orphans)


def add_data_routes(app: web.Application) -> None:
    app[BLOB_CHANGES] = asyncio.Lock()
    r = app.router
    r.add_get(PREFIX + "/files/{sha256}", get_file)
    r.add_get(PREFIX + "/compare", compare)
    r.add_post(PREFIX + "/bundles/export", export)
    r.add_post(PREFIX + "/bundles/import", import_)
    r.add_delete(PREFIX + "/sessions", delete_all)
    r.add_delete(PREFIX + "/sessions/{session_id}", delete_session)
