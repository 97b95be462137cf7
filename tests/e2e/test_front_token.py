"""Token auth of the front: on by default, on every route, and never in a log."""

from __future__ import annotations

import asyncio
import base64
import os
import re
import signal
import stat
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import orjson
import pytest

from llamon_playground.common.config import project_key
from llamon_playground.daemon.http.openapi import FRONT_OPERATIONS, OPERATIONS
from tests.support.api import Api
from tests.support.door import Front, P, cli, start_front
from tests.support.procs import Stack, wait_for
from tests.support.transports import both_transports

pytestmark = both_transports  # every test on each of the front's transports


@pytest.fixture
async def anonymous(front: Front) -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(base_url=front.url) as http:
        yield http


def concrete(path: str) -> str:
    return re.sub(r"{\w+}", "x", path)


ROUTES = sorted({(op.method, concrete(op.full_path)) for op in (*OPERATIONS, *FRONT_OPERATIONS)})


@pytest.mark.parametrize(("method", "path"), ROUTES)
async def test_every_route_needs_the_token(anonymous: aiohttp.ClientSession, method: str,
                                           path: str) -> None:
    # No Content-Type either: the token is checked first, so even a bad request gets 401.
    async with anonymous.request(method, path, allow_redirects=False) as resp:
        assert resp.status == 401, (method, path, await resp.text())
        assert (await resp.json())["detail"]["error"] == "unauthorized"
        assert resp.headers["WWW-Authenticate"].startswith("Bearer")


@pytest.mark.parametrize("header", ["Bearer wrong-token-0123456789abcdef", "Bearer ",
                                    "Basic dXNlcjpwYXNz", "Bearer {token}x", "Bearer x{token}",
                                    "{token}"])
async def test_wrong_credentials_are_401(front: Front, anonymous: aiohttp.ClientSession,
                                         header: str) -> None:
    async with anonymous.get(f"{P}/sessions",
                             headers={"Authorization": header.format(token=front.token)}) as r:
        assert r.status == 401


async def test_a_wrong_bearer_is_not_rescued_by_a_good_cookie(
        front: Front, anonymous: aiohttp.ClientSession) -> None:
    cookie = await login_cookie(front, anonymous)
    async with anonymous.get(f"{P}/sessions", headers={
            "Authorization": "Bearer nope", "Cookie": f"{cookie.key}={cookie.value}"}) as r:
        assert r.status == 401


async def test_query_token_opens_no_api_route(front: Front,
                                              anonymous: aiohttp.ClientSession) -> None:
    async with anonymous.get(f"{P}/sessions", params={"token": front.token or ""}) as resp:
        assert resp.status == 401


async def test_bearer_token_opens_the_api(front: Front) -> None:
    async with front.session() as http, http.get(f"{P}/sessions") as resp:
        assert resp.status == 200


async def login_cookie(front: Front, http: aiohttp.ClientSession) -> aiohttp.cookiejar.Morsel[str]:
    async with http.get("/", params={"token": front.token or ""},
                        allow_redirects=False) as resp:
        assert resp.status == 303 and resp.headers["Location"] == "/"
        [name] = [n for n in resp.cookies if n.startswith(f"llamon-playground-{front.port}-")]
        cookie = resp.cookies[name]
    assert cookie["httponly"] and cookie["samesite"] == "Strict" and cookie["path"] == "/"
    assert front.token not in cookie.value  # the cookie is derived from the token
    return cookie


async def test_token_link_sets_a_cookie_that_opens_the_api_and_sse(front: Front) -> None:
    jar = aiohttp.CookieJar(unsafe=True)  # cookies for an IP host
    async with aiohttp.ClientSession(base_url=front.url, cookie_jar=jar) as http:
        async with http.get("/", params={"token": front.token or ""}) as resp:
            assert resp.status == 200 and resp.url.query_string == ""  # redirected to "/"
            assert (await resp.json())["api"] == P
        async with http.get(f"{P}/sessions") as resp:
            assert resp.status == 200
        async with http.get(f"{P}/events") as resp:  # EventSource can only send cookies
            assert resp.status == 200
            assert resp.headers["Content-Type"].startswith("text/event-stream")
            # First the reconnection time the browser is to use, then the snapshot.
            assert await resp.content.readline() == b"retry: 500\n"
            assert await resp.content.readline() == b"\n"
            assert (await resp.content.readline()).startswith(b"event: host.state")


async def test_wrong_token_link_is_401_and_sets_no_cookie(
        front: Front, anonymous: aiohttp.ClientSession) -> None:
    async with anonymous.get("/", params={"token": "wrong"}, allow_redirects=False) as resp:
        assert resp.status == 401 and "Set-Cookie" not in resp.headers


async def test_the_login_page_says_which_token_it_lacks(
        front: Front, anonymous: aiohttp.ClientSession) -> None:
    html = {"Accept": "text/html"}
    cookie = await login_cookie(front, anonymous)
    cases = {
        "No token: this browser has not logged in": ({}, {}),
        "That token is not this front's token": ({"token": "wrong"}, {}),
        "This browser's login is from an earlier token": (
            {}, {"Cookie": f"{cookie.key}={'0' * len(cookie.value)}"}),
    }
    for says, (params, headers) in cases.items():
        async with anonymous.get("/", params=params, headers={**html, **headers},
                                 allow_redirects=False) as resp:
            page = await resp.text()
            assert resp.status == 401 and resp.content_type == "text/html", page
            assert says in page, page
            assert "@WHY@" not in page and "llamon-playground token" in page
            assert "Set-Cookie" not in resp.headers
            assert "default-src 'none'" in resp.headers["Content-Security-Policy"]


@pytest.mark.parametrize("which", ["other_port", "other_project", "wrong_value",
                                   "the_token_itself"])
async def test_cookie_must_be_ours(front: Front, anonymous: aiohttp.ClientSession,
                                   which: str) -> None:
    cookie = await login_cookie(front, anonymous)
    other_port = cookie.key.replace(f"-{front.port}-", f"-{front.port + 1}-")
    name, value = {"other_port": (other_port, cookie.value),
                   "other_project": (cookie.key.rsplit("-", 1)[0] + "-" + "0" * 16, cookie.value),
                   "wrong_value": (cookie.key, "0" * len(cookie.value)),
                   "the_token_itself": (cookie.key, front.token)}[which]
    async with anonymous.get(f"{P}/sessions", headers={"Cookie": f"{name}={value}"}) as resp:
        assert resp.status == 401


def test_token_is_random_long_and_stored_private(front: Front, door_stack: Stack) -> None:
    assert front.token is not None
    assert len(base64.urlsafe_b64decode(front.token + "==")) >= 16  # ≥ 128 bits
    path = door_stack.settings.front_token_path
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert front.token not in front.proc.output()  # `front` never prints it


def test_token_command_prints_the_running_token(front: Front, door_stack: Stack) -> None:
    result = cli(door_stack, "token", str(door_stack.project))
    assert result.returncode == 0 and result.stdout.strip() == front.token


# -- lifecycle: each test owns its fronts -------------------------------------------------------

def test_token_command_without_a_front_exits_3(stack: Stack) -> None:
    result = cli(stack, "token", str(stack.project))
    assert result.returncode == 3 and "no front" in result.stderr


def test_fronts_share_the_token_and_keep_it_until_rotated(stack: Stack) -> None:
    first = start_front(stack)
    second = start_front(stack)
    assert first.token == second.token
    second.proc.stop()
    assert cli(stack, "token", str(stack.project)).stdout.strip() == first.token
    first.proc.stop()
    third = start_front(stack)  # no front ran: the kept token still opens it
    assert third.token == first.token
    rotated = cli(stack, "token", "--rotate", str(stack.project))
    assert rotated.returncode == 0 and rotated.stdout.strip() != first.token
    assert cli(stack, "token", str(stack.project)).stdout.strip() == rotated.stdout.strip()
    path = stack.settings.front_token_path
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_token_from_the_environment_or_a_file(stack: Stack, tmp_path: Path) -> None:
    given = "env-token-" + "a" * 30
    front = start_front(stack, env={"LLAMON_PLAYGROUND_TOKEN": given})
    assert front.token == given
    front.proc.stop()
    token_file = tmp_path / "token"
    token_file.write_text("file-token-" + "b" * 30 + "\n")
    front = start_front(stack, env={"LLAMON_PLAYGROUND_TOKEN_FILE": str(token_file)})
    assert front.token == "file-token-" + "b" * 30


@pytest.mark.parametrize("bad", ["short", "has space in the middle of it", "non-ascii-\u00e9" * 3])
def test_unusable_given_token_is_a_usage_error(stack: Stack, bad: str) -> None:
    result = cli(stack, "front", str(stack.project), "--port", "0",
                 env={"LLAMON_PLAYGROUND_TOKEN": bad})
    assert result.returncode == 2 and "token" in result.stderr
    assert bad not in result.stderr + result.stdout


async def test_no_auth_warns_and_serves_without_a_token(daemon: Stack) -> None:
    front = start_front(daemon, "--no-auth")
    wait_for(lambda: "WARNING: --no-auth" in front.proc.output(), 10, "the warning")
    assert front.token is None and not daemon.settings.front_token_path.exists()
    async with aiohttp.ClientSession(base_url=front.url) as http:
        async with http.get(f"{P}/sessions") as resp:
            assert resp.status == 200
        async with http.get(f"{P}/sessions", headers={"Host": "evil.com"}) as resp:
            assert resp.status == 403  # the rest of the door stays shut


async def test_up_prints_the_url_with_the_token(stack: Stack) -> None:
    up = start_front(stack, command="up")
    try:
        line = wait_for(lambda: next((ln for ln in up.proc.output().splitlines()
                                      if "?token=" in ln), None), 30, "the token URL")
        link = line.split("open in a browser: ")[1].strip()
        assert link == f"{up.url}/?token={up.token}"
        api = Api(aiohttp.ClientSession(base_url=up.url, headers=up.auth()))
        try:
            assert (await api.ok("GET", "sessions")) == {"sessions": [], "next_after": None}
        finally:
            await api.close()
    finally:
        pid = orjson.loads(stack.settings.discovery_path.read_bytes())["pid"]
        os.kill(pid, 15)  # `up` detached the daemon: stop it the way `stop` does
        wait_for(lambda: not stack.settings.discovery_path.exists(), 20, "the daemon to stop")


# -- logs ---------------------------------------------------------------------------------------

async def fake_daemon(path: Path, token: str) -> asyncio.AbstractServer:
    """A "daemon" whose answer breaks the front's HTTP parser with the token in the bytes:
    the front's 500 then carries the token in its exception text."""
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(f"HTTP/1.1 200 OK\r\nContent-Length: {token}\r\n\r\n".encode())
        await writer.drain()
        writer.close()
    return await asyncio.start_unix_server(handle, str(path))


@pytest.mark.parametrize("log_format", ["text", "json"])
async def test_token_never_reaches_the_log_even_on_a_500(stack: Stack, log_format: str) -> None:
    front = start_front(stack, global_args=("-v",),
                        env={"LLAMON_PLAYGROUND_LOG_FORMAT": log_format})
    assert front.token is not None
    server = await fake_daemon(stack.settings.socket_path, front.token)
    try:
        async with front.session() as http:
            async with http.get(f"{P}/sessions", params={"token": front.token}, headers={
                    "Referer": f"{front.url}/?token={front.token}",
                    "Cookie": f"llamon-playground-{front.port}-{project_key(stack.project)}="
                              f"{front.token}"}) as resp:
                assert resp.status == 500
                assert (await resp.json())["detail"]["error"] == "internal_error"
                rid = resp.headers["X-Request-Id"]
    finally:
        server.close()
        await server.wait_closed()
    front.proc.stop()
    log = front.proc.output()
    assert "Traceback" in log or '"exception"' in log  # the failure itself is logged...
    assert rid in log  # ...with its request id
    assert front.token not in log  # ...and the token is not
    if log_format == "json":
        lines = [orjson.loads(ln) for ln in log.splitlines() if ln.startswith("{")]
        failure = next(ln for ln in lines if ln["level"] == "error")
        assert failure["request_id"] == rid and "<redacted>" in failure["exception"]


async def test_daemon_and_host_never_see_the_token(stack: Stack) -> None:
    given = "env-token-" + "c" * 30
    stack.env["LLAMON_PLAYGROUND_TOKEN"] = given  # as a user exporting it for both would
    stack.start_daemon()
    front = start_front(stack, global_args=("-v",), env={"LLAMON_PLAYGROUND_TOKEN": given})
    api = Api(aiohttp.ClientSession(base_url=front.url, headers=front.auth()))
    try:
        run = await api.wait_status(await api.start_run(await api.session(), "stream a b"))
        assert run["status"] == "completed"
        host_pid = (await api.ok("GET", "host"))["pid"]
        environ = Path(f"/proc/{host_pid}/environ").read_bytes()
        assert given.encode() not in environ and b"LLAMON_PLAYGROUND_TOKEN" not in environ
    finally:
        await api.close()
    assert stack.daemon is not None and given not in stack.daemon.output()


async def test_a_browser_outlives_a_front_restart_until_the_token_is_rotated(
        daemon: Stack) -> None:
    """A real front SIGKILL with no LLAMON_PLAYGROUND_TOKEN set: the restarted front (same
    port, as a service's Restart=on-failure) lets the tab's cookie in, and its EventSource
    resumes by Last-Event-ID and sees every event once; `token --rotate` logs it out."""
    first = start_front(daemon)
    direct = Api.for_socket(str(daemon.settings.socket_path))
    received: list[int] = []
    try:
        session = await direct.session()
        run_id = await direct.start_run(session, "slow")
        async with aiohttp.ClientSession(base_url=first.url) as anon:
            cookie = await login_cookie(first, anon)
        tab = Api.for_url(first.url, token="unused")
        tab.http.headers.pop("Authorization")
        tab.http.headers["Cookie"] = f"{cookie.key}={cookie.value}"
        try:
            async for ev in tab.stream(run_id):
                received.append(ev.id)
                if ev.event == "output.delta":
                    break
            first.proc.signal(signal.SIGKILL)
            first.proc.wait(10)
            second = start_front(daemon, "--port", str(first.port))
            assert second.port == first.port and second.token == first.token
            cancelled = False
            async for ev in tab.stream(run_id, last_event_id=received[-1]):
                received.append(ev.id)
                if ev.event == "output.delta" and not cancelled:  # it streams on: stop it
                    cancelled = True
                    await direct.ok("DELETE", f"runs/{run_id}")
            rotated = cli(daemon, "token", "--rotate", str(daemon.project)).stdout.strip()
            code, doc = await tab.call("GET", "sessions")
            assert code == 401, doc
        finally:
            await tab.close()
        fresh = Api.for_url(second.url, token=rotated)
        try:
            assert (await fresh.call("GET", "sessions"))[0] == 200
        finally:
            await fresh.close()
        full = await direct.events(run_id)
        assert received == [e.id for e in full], "every event once, in order"
        assert full[-1].data["status"] == "cancelled"
    finally:
        await direct.close()
