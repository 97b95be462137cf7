"""The data routes: files, compare, bundles and "delete all history" (docs/storage.md).

    GET    /api/playground/v1/files/{sha256}     a stored blob, always as an attachment
    GET    /api/playground/v1/compare?left=&right=
    POST   /api/playground/v1/bundles/export     {session_ids?, run_ids?} → bundle
    POST   /api/playground/v1/bundles/import     {"bundle": ...} or the bundle → 201 ID map
    DELETE /api/playground/v1/sessions           every session, run, event, unreferenced blob
    GET    /api/playground/v1/runs/{run_id}/{input|output}/{index}/content
                                                 one part of a run, whole (routes.py
                                                 declares it beside the run's routes)

A run's part whole is what a cut part's `content_url` names: `GET /runs/{id}` answers a
long text as an excerpt with its size and that link, so the answer stays small whatever
the run's output; `part_content` streams the whole from the blob store (a long text, a
file) with Content-Length and HTTP range requests, never reading it into memory. A part
stored inline (a short text, data) is answered from its row.
"""

from __future__ import annotations

import re
from urllib.parse import quote

import orjson

from aiohttp import web

from llamon_playground.common.config import Settings
from llamon_playground.common.contract import API_PREFIX
from llamon_playground.common.front_routes import IMPORT_BODY_BYTES
from llamon_playground.common.http_json import json_response
from llamon_playground.daemon.errors import BadRequest
from llamon_playground.daemon.data.bundle_json import parse_selection
from llamon_playground.daemon.http.util import read_body, read_object
from llamon_playground.daemon.store.history_service import HistoryService

PREFIX = API_PREFIX
# A bundle carries its files as base64 (4/3 of their size), so it needs more than the
# default 16 MiB body limit; the validator's own limits (160 MiB of blobs) fit inside.
MAX_IMPORT_BYTES = IMPORT_BODY_BYTES  # the front refuses a larger one first
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


SIDES = ("input", "output")
INDEX = re.compile(r"^[0-9]{1,6}$")
TEXT = "text/plain; charset=utf-8"
# User content: never sniffed, never scripted, kept out of browser caches.
SAFE = {"X-Content-Type-Options": "nosniff", "Content-Security-Policy": "sandbox",
        "Cache-Control": "no-store"}


async def part_content(history: HistoryService, request: web.Request) -> web.StreamResponse:
    """The handler (routes.py declares the route)."""
    side, index = request.match_info["side"], request.match_info["index"]
    if side not in SIDES or not INDEX.match(index):
        raise BadRequest("a part is named by `input` or `output` and its index",
                         code="invalid_part_path")
    part, path = await history.part_content(request.match_info["run_id"], side, int(index))
    kind = part.get("kind")
    headers = dict(SAFE)
    if kind == "file":
        mime = part.get("mime")
        headers["Content-Type"] = mime if isinstance(mime, str) and _MIME.match(mime) \
            else "application/octet-stream"
        headers["Content-Disposition"] = content_disposition(part.get("name"),
                                                             str(part.get("sha256")))
    else:
        headers["Content-Type"] = TEXT if kind != "data" else "application/json"
    if path is not None:
        return web.FileResponse(path, headers=headers)  # Content-Length, Range, If-Range
    if kind == "text":
        body = str(part.get("text", "")).encode("utf-8", "surrogatepass")
    elif kind == "data":
        body = orjson.dumps(part.get("data"))
    else:
        body = orjson.dumps(part)  # a status or error part, an external file's reference
        headers["Content-Type"] = "application/json"
    return _ranged(request, body, headers)


def _ranged(request: web.Request, body: bytes, headers: dict[str, str]) -> web.Response:
    """An inline part's bytes, or the one range asked for (as FileResponse answers)."""
    headers["Accept-Ranges"] = "bytes"
    if "Range" not in request.headers:
        return web.Response(body=body, headers=headers)
    try:
        wanted = request.http_range
    except ValueError:
        wanted = slice(len(body), None)  # unreadable: unsatisfiable, as below
    start, stop, _ = wanted.indices(len(body))
    if start >= len(body) or start >= stop:
        headers["Content-Range"] = f"bytes */{len(body)}"
        return web.Response(status=416, headers=headers)
    headers["Content-Range"] = f"bytes {start}-{stop - 1}/{len(body)}"
    return web.Response(status=206, body=body[start:stop], headers=headers)
