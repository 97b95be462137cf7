"""The interface a run speaks: from the card the Host served its readiness probe, else fetched."""

from __future__ import annotations

import aiohttp
import orjson
from aiohttp import web

from llamon_playground.daemon.a2a.client import A2AClient
from llamon_playground.daemon.a2a.wire import V03, V1
from tests.support.loopback_app import serving


def card(url: str, version: str) -> bytes:
    return orjson.dumps({"name": "h", "supportedInterfaces": [
        {"url": url, "protocolBinding": "JSONRPC", "protocolVersion": version}]})


async def test_the_card_served_at_ready_saves_a_fetch_and_a_bad_one_is_fetched_again() -> None:
    fetched: list[str] = []

    async def serve_card(request: web.Request) -> web.Response:
        fetched.append(request.path)
        return web.Response(body=card(str(request.url.with_path("/rpc")), "0.3"),
                            content_type="application/json")

    app = web.Application()
    app.router.add_get("/.well-known/agent-card.json", serve_card)
    async with serving(app) as base, aiohttp.ClientSession() as http:
        client = A2AClient(http, base)
        served = await client.interface(card(f"{base}/v1", "1.0"))
        assert (served.url, served.version) == (f"{base}/v1", V1) and fetched == []
        again = await client.interface(b"<html>not a card</html>")
        assert (again.url, again.version) == (f"{base}/rpc", V03)
        assert fetched == ["/.well-known/agent-card.json"]
