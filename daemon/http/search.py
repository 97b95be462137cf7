"""Search history (docs/api.md, "Search").

    GET /api/playground/v1/search?q=WORDS&status=..&reason=..&labelled=1
        &evaluator_failed=1&session=ID&after=CURSOR&limit=N      → SearchResults
"""

from __future__ import annotations

from aiohttp import web

from llamon_playground.common.http_json import decimal_digits, json_response
from llamon_playground.daemon.http.util import bind
from llamon_playground.daemon.store.search.query import SearchQuery, invalid, parse_query
from llamon_playground.daemon.store.search.service import RunSearch

MAX_PAGE = 1000
DEFAULT_PAGE = 50
FLAGS = {"1": True, "true": True, "0": False, "false": False}


def _one(request: web.Request, name: str) -> str | None:
    values = request.query.getall(name, [])
    if len(values) > 1:
        raise invalid(f"give `{name}` at most once")
    return values[0] if values else None


def _flag(request: web.Request, name: str) -> bool:
    raw = _one(request, name)
    if raw is None:
        return False
    if raw not in FLAGS:
        raise invalid(f"`{name}` must be 1, true, 0 or false")
    return FLAGS[raw]


def _count(request: web.Request, name: str, default: int, minimum: int,
           maximum: int) -> int:
    raw = _one(request, name)
    if raw is None:
        return default
    if not decimal_digits(raw) or len(raw) > 18 or not minimum <= int(raw) <= maximum:
        raise invalid(f"`{name}` must be an integer from {minimum} to {maximum}")
    return int(raw)


def parse_search(request: web.Request) -> tuple[SearchQuery, int, int]:
    """The query, the cursor and the page size; anything wrong is 400 invalid_query."""
    query = parse_query(
        _one(request, "q") or "", statuses=request.query.getall("status", []),
        reasons=request.query.getall("reason", []), labelled=_flag(request, "labelled"),
        evaluator_failed=_flag(request, "evaluator_failed"),
        session_id=_one(request, "session"))
    after = _count(request, "after", 0, 0, 2**62)
    return query, after, _count(request, "limit", DEFAULT_PAGE, 1, MAX_PAGE)


class SearchRoutes:
    """The search route: parse, search, render."""

    def __init__(self, search: RunSearch) -> None:
        self._search = search

    async def search(self, request: web.Request) -> web.Response:
        query, after, limit = parse_search(request)
        hits, cursor = await self._search.search(query, after, limit)
        return json_response({"hits": hits, "next_after": cursor})


def add_search_routes(app: web.Application, *, search: RunSearch) -> None:
    """Route the search over runs."""
    bind(app, "search", SearchRoutes(search))
