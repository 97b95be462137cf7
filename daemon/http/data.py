"""The data routes: files, compare, bundles and "delete all history" (docs/storage.md).

    GET    /api/playground/v1/files/{sha256}     a stored blob, always as an attachment
    GET    /api/playground/v1/compare?left=&right=
    POST   /api/playground/v1/bundles/export     {session_ids?, run_ids?} → bundle
    POST   /api/playground/v1/bundles/import     {"bundle": ...} or the bundle → 201 ID map
    DELETE /api/playground/v1/sessions           every session, run, event, unreferenced blob
"""

from __future__ import annotations

import re
from urllib.parse import quote

from aiohttp import web

from llamon_playground.common.config import Settings
from llamon_playground.common.contract import API_PREFIX
from llamon_playground.common.http_json import json_response
from llamon_playground.daemon.data.bundle_json import parse_selection
from llamon_playground.daemon.http.util import read_body, read_object
from llamon_playground.daemon.store.history_service import HistoryService

PREFIX = API_PREFIX
# A bundle carries its files as base64 (4/3 of their size), so it needs more than the
# default 16 MiB body limit; the validator's own limits (160 MiB of blobs) fit inside.
MAX_IMPORT_BYTES = 256 * 1024 * 1024
WRITE_SLICE = 1 << 20  # bytes of an export's answer handed to the transport at once
_MIME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*$")


class DataRoutes:
    """Files, compare, bundles and deletion; the rules are the history service's."""

    def __init__(self, settings: Settings, history: HistoryService) -> None:
        self._settings = settings
        self._history = history

    async def get_file(self, request: web.Request) -> web.StreamResponse:
        sha = request.match_info["sha256"]
        path, part = await self._history.file(sha)
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

    async def compare(self, request: web.Request) -> web.Response:
        return json_response(await self._history.compare(
            request.query.get("left", ""), request.query.get("right", "")))

    async def export(self, request: web.Request) -> web.StreamResponse:
        session_ids, run_ids = parse_selection(
            await read_object(request, self._settings.max_request_bytes))
        body = await self._history.export(session_ids, run_ids)
        # Written a slice at a time: handed to the transport whole, what the socket did not
        # take at once was copied into its buffer in one go on the loop's thread (~100 ms for
        # 200 MB).
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

    async def import_(self, request: web.Request) -> web.Response:
        # The raw body is passed on, not kept here: the import lets go of it once parsed.
        return json_response(
            await self._history.import_(await read_body(request, MAX_IMPORT_BYTES)), 201)

    async def delete_all(self, request: web.Request) -> web.Response:
        return json_response(await self._history.delete_all())

    async def delete_session(self, request: web.Request) -> web.Response:
        return json_response(
            await self._history.delete_session(request.match_info["session_id"]))


def content_disposition(name: object, sha: str) -> str:
    """`attachment` with an ASCII fallback name and the UTF-8 original (RFC 6266/5987)."""
    filename = name if isinstance(name, str) and name.strip() else sha
    filename = filename.replace("\\", "/").rsplit("/", 1)[-1] or sha
    ascii_name = re.sub(r"[^A-Za-z0-9._ -]", "_", filename)[:200] or sha
    return f"attachment; filename=\"{ascii_name}\"; filename*=UTF-8''{quote(filename, safe='')}"


def add_data_routes(app: web.Application, *, settings: Settings,
                    history: HistoryService) -> None:
    routes = DataRoutes(settings, history)
    r = app.router
    r.add_get(PREFIX + "/files/{sha256}", routes.get_file)
    r.add_get(PREFIX + "/compare", routes.compare)
    r.add_post(PREFIX + "/bundles/export", routes.export)
    r.add_post(PREFIX + "/bundles/import", routes.import_)
    r.add_delete(PREFIX + "/sessions", routes.delete_all)
    r.add_delete(PREFIX + "/sessions/{session_id}", routes.delete_session)
