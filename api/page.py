"""The Playground page: plain files from `api/page/`, served on the front's own origin.

The page sits behind the same door as the API (the token cookie), so it can call the API
and open its SSE streams without CORS. `/` answers the page to a browser (an `Accept`
naming `text/html`) and the small JSON landing object to everything else (curl, scripts);
a browser without the cookie gets a 401 page saying how to log in (its stylesheet would
need the cookie too, so it has none).
Every page response carries a strict Content-Security-Policy: scripts and styles from this
origin only, no inline script, `connect-src 'self'`; the page inserts agent output as text.
"""

from __future__ import annotations

import html
from pathlib import Path

from aiohttp import web

from llamon_playground.common.contract import API_PREFIX

PAGE_DIR = Path(__file__).resolve().parent / "page"
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
TYPES = {".html": "text/html", ".js": "text/javascript", ".mjs": "text/javascript",
         ".css": "text/css"}
PAGE_HEADERS = {"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff",
                "Referrer-Policy": "no-referrer", "Cache-Control": "no-cache"}


def page_files() -> dict[str, Path]:
    """The files the page may serve, by name: a fixed list, so no path is ever resolved
    from a request."""
    files = {path.name: path for path in PAGE_DIR.iterdir()
             if path.is_file() and path.suffix in TYPES}
    # The vendored library (vendor/README.md), served as `/page/vendor/<name>`.
    files.update({f"vendor/{path.name}": path for path in (PAGE_DIR / "vendor").iterdir()
                  if path.is_file() and path.suffix in TYPES})
    return files


def _file_response(path: Path) -> web.Response:
    return web.Response(body=path.read_bytes(), content_type=TYPES[path.suffix],
                        charset="utf-8", headers=PAGE_HEADERS)


async def landing(request: web.Request) -> web.Response:
    if wants_page(request):
        return _file_response(PAGE_DIR / "index.html")
    return web.json_response({"service": "llamon Playground", "api": API_PREFIX,
                              "openapi": API_PREFIX + "/openapi.json", "health": "/health",
                              "page": "/"})


def wants_page(request: web.Request) -> bool:
    return request.method == "GET" and request.path == "/" and \
        "text/html" in request.headers.get("Accept", "")


# What the 401 page says first: which token it was given, if any (door.refused_login).
REFUSED = {
    "none": "No token: this browser has not logged in to this front.",
    "wrong": "That token is not this front's token: the address carried a token, but not "
             "the one this front was started with.",
    "stale": "This browser's login is from an earlier token: the front's token changed "
             "since (a new `up`, or the token was rotated), so log in again.",
}


def unauthorized_page(why: str = "none") -> web.Response:
    """What a browser without the cookie gets at `/`: which token it lacks and how to log
    in, as a page (401). The sentence is one of REFUSED, never a request's text."""
    page = (PAGE_DIR / "unauthorized.html").read_text(encoding="utf-8")
    body = page.replace("@WHY@", html.escape(REFUSED.get(why, REFUSED["none"]), quote=False))
    response = web.Response(text=body, content_type="text/html", charset="utf-8",
                            headers=PAGE_HEADERS)
    response.set_status(401)
    return response


def add_page_routes(app: web.Application) -> None:
    files = page_files()

    async def asset(request: web.Request) -> web.Response:
        path = files.get(request.match_info["name"])
        if path is None or path.suffix == ".html":
            raise web.HTTPNotFound()
        return _file_response(path)

    app.router.add_get("/", landing)
    app.router.add_get("/page/{name:(?:vendor/)?[^/]+}", asset)
