"""The readiness probe asks when the Host speaks: a Host that writes a line as it starts to
listen is Ready then, not at the probe's next poll (host_manager/readiness.py)."""

from __future__ import annotations

import asyncio
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from llamon_playground.host_manager import readiness
from llamon_playground.host_manager.environment import free_port
from llamon_playground.host_manager.process import HostProcess
from tests.support.loopback_app import serving

# A Host in a few lines: it listens, says so, and answers its card.
HOST = textwrap.dedent("""
    import http.server, sys
    class Card(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = b'{"name": "tiny"}'
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        def log_message(self, *args):
            pass
    server = http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Card)
    print("listening", flush=True)
    server.serve_forever()
""")


async def test_a_host_that_says_it_listens_is_ready_without_waiting_for_a_poll(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Polls so far apart that only the Host's line can bring the probe back in time: the
    # first probe goes out as the process is spawned, long before its interpreter listens.
    monkeypatch.setattr(readiness, "EARLY_POLL_INTERVAL", 600.0)
    monkeypatch.setattr(readiness, "POLL_INTERVAL", 600.0)
    script = tmp_path / "host.py"
    script.write_text(HOST)
    port = free_port()
    said: list[bytes] = []
    process = HostProcess([sys.executable, str(script), str(port)], tmp_path, {},
                          lambda stream, chunk: said.append(chunk))
    try:
        async with readiness.probe_session() as http:
            card = await asyncio.wait_for(
                readiness.wait_ready(process, f"http://127.0.0.1:{port}", 60, list, http), 30)
    finally:
        await process.stop(5)
    assert card == b'{"name": "tiny"}'
    assert b"listening\n" in b"".join(said)


async def test_the_exposure_check_reuses_the_probes_connection() -> None:
    # Each new connection is work for a Host that has just started, on the path of every
    # restart: the check's two tries take the probe's kept-alive connection and one more.
    peers: set[Any] = set()

    def seen(request: web.Request) -> None:
        peers.add(request.transport.get_extra_info("peername") if request.transport else None)

    async def card(request: web.Request) -> web.Response:
        seen(request)
        if not request.host.startswith("127.0.0.1:"):  # a rebound name
            return web.json_response({"error": "host_refused"}, status=403)
        return web.json_response({"name": "tiny"})

    async def rpc(request: web.Request) -> web.Response:
        seen(request)
        return web.json_response({"error": "unsupported_media_type"}, status=415)

    app = web.Application()
    app.router.add_get(readiness.CARD_PATH, card)
    app.router.add_post("/", rpc)
    async with serving(app) as url, readiness.probe_session() as http:
        async with http.get(url + readiness.CARD_PATH) as resp:
            body = await resp.read()
        found = await readiness.exposure(url, body, http)
    assert found == []
    assert len(peers) == 2 and None not in peers
