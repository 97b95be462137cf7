"""daemon/a2a/pool.py: a run's connection to the Host is kept for the next run of the same
generation, and never reaches another, over a real local HTTP server that notes the client
port of each request (one port: one connection)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from llamon_playground.daemon.a2a.pool import HostConnections
from tests.support.loopback_app import serving
from tests.support.waiting import eventually


@pytest.fixture
async def server() -> AsyncIterator[tuple[str, list[int]]]:
    """A Host stand-in: answers every GET, noting the port the request came from."""
    ports: list[int] = []

    async def answer(request: web.Request) -> web.Response:
        peer = request.transport.get_extra_info("peername") if request.transport else None
        ports.append(peer[1] if peer else -1)
        return web.Response(text="ok")

    app = web.Application()
    app.router.add_get("/", answer)
    async with serving(app) as base:
        yield f"{base}/", ports


async def get(pool: HostConnections, generation: int, url: str) -> None:
    async with pool.session(generation).get(url) as resp:
        assert await resp.text() == "ok"


async def test_runs_of_one_generation_share_a_connection(
        server: tuple[str, list[int]]) -> None:
    url, ports = server
    pool = HostConnections()
    try:
        for _ in range(3):
            await get(pool, 1, url)
        assert len(set(ports)) == 1, ports  # before the pool: a new connection each run
    finally:
        await pool.close()


async def test_a_new_generation_closes_the_previous_ones_connections(
        server: tuple[str, list[int]]) -> None:
    """The Host restarting (any state but its generation Ready) retires the pool at once:
    its connection is closed, and the next run's goes to the new generation on a new one."""
    url, ports = server
    pool = HostConnections()
    try:
        await get(pool, 1, url)
        first = pool.session(1)
        pool.host_changed({"state": "ready", "generation": 1})  # the same one: kept
        assert pool.session(1) is first and not first.closed
        pool.host_changed({"state": "starting", "generation": 2})
        assert pool.generation is None
        await eventually(lambda: first.closed, what="the old generation's pool closed")
        await get(pool, 2, url)
        assert len(set(ports)) == 2, ports
        second = pool.session(2)
        # A generation asked for without a state change in between still gets its own.
        await get(pool, 3, url)
        await eventually(lambda: second.closed, what="generation 2's pool closed")
        assert len(set(ports)) == 3, ports
    finally:
        await pool.close()


async def test_close_closes_the_kept_connections_and_refuses_new_ones(
        server: tuple[str, list[int]]) -> None:
    url, _ports = server
    pool = HostConnections()
    await get(pool, 1, url)
    kept = pool.session(1)
    await pool.close()
    assert kept.closed
    with pytest.raises(RuntimeError):
        pool.session(1)
