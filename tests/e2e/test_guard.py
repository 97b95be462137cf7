"""The front's door against a running front: Host, Origin/Sec-Fetch-Site, Content-Type, body
limits, JSON edge cases. Each case is its own test; after a refusal the front keeps serving.
"""

from __future__ import annotations

import gzip
import io
import socket

import aiohttp
import orjson
import pytest

from tests.support.door import Front, P, RawAnswer, cli, raw_request, start_front
from tests.support.procs import Stack
from tests.support.transports import both_transports

pytestmark = both_transports  # every test on each of the front's transports

BLOB = "0" * 64


def get(front: Front, path: str = "/health", host: bytes | None = None,
        extra: bytes = b"") -> RawAnswer:
    host_line = b"" if host is None else b"Host: " + host + b"\r\n"
    auth = f"Authorization: Bearer {front.token}\r\n".encode()
    return raw_request(front.port, f"GET {path} HTTP/1.1\r\n".encode() + host_line + auth + extra)


def still_serving(front: Front) -> None:
    answer = get(front, host=f"127.0.0.1:{front.port}".encode())
    assert answer.status == 200, answer


def detail(answer: RawAnswer) -> dict[str, object]:
    return orjson.loads(answer.body)["detail"]  # type: ignore[no-any-return]


# -- bind ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("host", ["0.0.0.0", "::", "10.0.0.1", "127.0.0.1.nip.io"])
def test_front_refuses_to_bind_outside_loopback(door_stack: Stack, host: str) -> None:
    result = cli(door_stack, "front", str(door_stack.project), "--host", host, "--port", "0")
    assert result.returncode == 2 and "loopback" in result.stderr


# -- Host header --------------------------------------------------------------------------------

BAD_HOSTS = {
    "rebinding_name": b"localhost.evil.com:{port}",
    "nip_io": b"127.0.0.1.nip.io:{port}",
    "foreign_name": b"evil.com",
    "foreign_with_our_port": b"evil.com:{port}",
    "wrong_port": b"127.0.0.1:1",
    "no_port": b"127.0.0.1",
    "empty": b"",
    "userinfo": b"127.0.0.1:{port}@evil.com",
    "malformed_ipv6": b"[::1:{port}",
    "trailing_dot": b"localhost.:{port}",
    "non_ascii": "l\u043ecalhost:{port}".encode(),
    "ten_kilobytes": b"a" * 10_000,
}


@pytest.mark.parametrize("case", sorted(BAD_HOSTS))
def test_foreign_host_header_is_refused(front: Front, case: str) -> None:
    host = BAD_HOSTS[case].replace(b"{port}", str(front.port).encode())
    answer = get(front, host=host)
    assert answer.status in (400, 403), answer
    if answer.status == 403:
        assert detail(answer)["error"] == "host_not_allowed"
    still_serving(front)


def test_missing_host_header_is_refused(front: Front) -> None:
    assert get(front, host=None).status in (400, 403)  # aiohttp itself refuses HTTP/1.1
    old = raw_request(front.port, f"GET /health HTTP/1.0\r\nAuthorization: Bearer "
                                  f"{front.token}".encode())
    assert old.status == 403 and detail(old)["error"] == "host_not_allowed"
    still_serving(front)


@pytest.mark.parametrize("name", ["127.0.0.1", "localhost", "LocalHost", "[::1]"])
def test_loopback_host_names_with_our_port_pass(front: Front, name: str) -> None:
    assert get(front, host=f"{name}:{front.port}".encode()).status == 200


@pytest.mark.parametrize("path", ["/", "/health", f"{P}/openapi.json", f"{P}/sessions",
                                  f"{P}/runs/run_x/events", f"{P}/events",
                                  f"{P}/files/{BLOB}", f"{P}/host/logs?follow=1"])
def test_host_check_covers_every_kind_of_route(front: Front, path: str) -> None:
    answer = get(front, path, host=b"evil.example:80")
    assert answer.status == 403 and detail(answer)["error"] == "host_not_allowed"


# -- Origin and Sec-Fetch-Site on state-changing requests ---------------------------------------

async def post_session(front: Front, headers: dict[str, str]) -> tuple[int, dict[str, object]]:
    async with front.session() as http:
        async with http.post(f"{P}/sessions", data=b'{"title": "guard"}',
                             headers={"Content-Type": "application/json", **headers}) as resp:
            assert "Access-Control-Allow-Origin" not in resp.headers
            return resp.status, await resp.json()


@pytest.mark.parametrize("origin", ["http://evil.com", "null", "http://localhost:1",
                                    "https://127.0.0.1:{port}", "http://127.0.0.1.nip.io:{port}"])
async def test_foreign_origin_may_not_change_state(front: Front, origin: str) -> None:
    status, doc = await post_session(front, {"Origin": origin.format(port=front.port)})
    assert status == 403 and doc["detail"]["error"] == "origin_not_allowed"  # type: ignore[index]


async def test_cross_site_fetch_may_not_change_state(front: Front) -> None:
    status, doc = await post_session(front, {"Sec-Fetch-Site": "cross-site"})
    assert status == 403 and doc["detail"]["error"] == "cross_site_request"  # type: ignore[index]


@pytest.mark.parametrize("method", ["DELETE", "PUT", "PATCH"])
async def test_other_state_changing_methods_check_the_origin(front: Front, method: str) -> None:
    async with front.session() as http:
        async with http.request(method, f"{P}/sessions/ses_x", headers={
                "Origin": "http://evil.com", "Content-Type": "application/json"}) as resp:
            assert resp.status == 403


async def test_own_origin_and_same_origin_fetch_pass(front: Front) -> None:
    status, _ = await post_session(front, {"Origin": f"http://localhost:{front.port}",
                                           "Sec-Fetch-Site": "same-origin"})
    assert status == 201


async def test_reads_from_a_foreign_origin_get_no_cors_grant(front: Front) -> None:
    async with front.session() as http:
        for method in ("GET", "OPTIONS"):
            async with http.request(method, f"{P}/sessions", headers={
                    "Origin": "http://evil.com",
                    "Access-Control-Request-Method": "POST"}) as resp:
                assert not [h for h in resp.headers if h.lower().startswith("access-control")]


# -- Content-Type -------------------------------------------------------------------------------

@pytest.mark.parametrize("content_type", [None, "text/plain", "application/x-www-form-urlencoded",
                                          "multipart/form-data; boundary=x", "application/jsonx"])
async def test_state_change_without_json_content_type_is_415(front: Front,
                                                             content_type: str | None) -> None:
    headers = {"Content-Type": content_type} if content_type else {}
    async with front.session(skip_auto_headers=["Content-Type"]) as http:
        async with http.post(f"{P}/sessions", data=b'{"title": "csrf"}',
                             headers=headers) as resp:
            assert resp.status == 415
            assert (await resp.json())["detail"]["error"] == "unsupported_media_type"


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "br", "GZIP, identity"])
async def test_a_compressed_request_body_is_415_at_once(front: Front, encoding: str) -> None:
    body = gzip.compress(orjson.dumps({"title": "zipped " * 2000}))
    async with front.session() as http:
        async with http.post(f"{P}/sessions", data=body, timeout=aiohttp.ClientTimeout(total=10),
                             headers={"Content-Type": "application/json",
                                      "Content-Encoding": encoding}) as resp:
            assert resp.status == 415
            assert (await resp.json())["detail"]["error"] == "unsupported_content_encoding"
    status, _ = await post_session(front, {"Content-Encoding": "identity"})
    assert status == 201


@pytest.mark.parametrize("second", ["gzip", "identity, br", "x-foo"])
def test_every_content_encoding_header_is_checked(front: Front, second: str) -> None:
    body = gzip.compress(b'{"title": "zipped"}')
    answer = raw_request(front.port, (
        f"POST {P}/sessions HTTP/1.1\r\nHost: 127.0.0.1:{front.port}\r\n"
        f"Authorization: Bearer {front.token}\r\nContent-Type: application/json\r\n"
        f"Content-Encoding: identity\r\nContent-Encoding: {second}\r\n"
        f"Content-Length: {len(body)}").encode(), body)
    assert answer.status == 415, answer.body
    assert detail(answer)["error"] == "unsupported_content_encoding"


async def test_bodiless_delete_needs_the_json_content_type_too(front: Front) -> None:
    async with front.session(skip_auto_headers=["Content-Type"]) as http:
        async with http.delete(f"{P}/runs/run_x") as resp:
            assert resp.status == 415
        async with http.delete(f"{P}/runs/run_x",
                               headers={"Content-Type": "application/json"}) as resp:
            assert resp.status == 404


async def test_json_content_type_with_charset_passes(front: Front) -> None:
    status, _ = await post_session(front, {"Content-Type": "application/json; charset=utf-8"})
    assert status == 201


# -- body limits --------------------------------------------------------------------------------

def test_declared_oversized_body_is_413_before_it_is_sent(front: Front) -> None:
    # Only the headers go out: the answer comes without the front waiting for 2 MiB.
    head = (f"POST {P}/sessions HTTP/1.1\r\nHost: 127.0.0.1:{front.port}\r\n"
            f"Authorization: Bearer {front.token}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {2 * 1024 * 1024}").encode()
    answer = raw_request(front.port, head, timeout=10)
    assert answer.status == 413 and detail(answer)["error"] == "payload_too_large"
    still_serving(front)


async def test_chunked_oversized_body_is_cut_off_with_413(front: Front) -> None:
    async def body() -> object:
        for _ in range(40):
            yield b" " * 64 * 1024  # 2.5 MiB in all, never declared
    async with front.session() as http:
        async with http.post(f"{P}/sessions", data=body(),
                             headers={"Content-Type": "application/json"}) as resp:
            assert resp.status == 413
            assert (await resp.json())["detail"]["error"] == "payload_too_large"
    still_serving(front)


async def test_bundle_import_takes_a_larger_body_than_other_routes(front: Front) -> None:
    big = orjson.dumps({"format": "llamon.playground.bundle/1", "pad": "x" * (2 * 1024 * 1024)})
    async with front.session() as http:
        async with http.post(f"{P}/sessions", data=io.BytesIO(big),
                             headers={"Content-Type": "application/json"}) as resp:
            assert resp.status == 413
        async with http.post(f"{P}/bundles/import", data=io.BytesIO(big),
                             headers={"Content-Type": "application/json"}) as resp:
            assert resp.status == 400  # parsed and refused on its merits, not its size


# -- JSON edge cases ----------------------------------------------------------------------------

JSON_CASES = {
    "nesting_past_the_parser": b'{"title": "x", "metadata": {"a": ' + b"[" * 5000 + b"]" * 5000
                               + b"}}",
    "nesting_past_the_daemon_cap": b'{"title": "x", "metadata": {"a": ' + b"[" * 100
                                   + b"]" * 100 + b"}}",
    "huge_integer": b'{"title": "x", "metadata": {"n": ' + b"9" * 5000 + b"}}",
    "huge_exponent": b'{"title": "x", "metadata": {"n": 1e999999}}',
    "not_json": b"{'title': 'x'}",
    "truncated": b'{"title": "x"',
}


@pytest.mark.parametrize("case", sorted(JSON_CASES))
async def test_pathological_json_is_400_never_500(front: Front, case: str) -> None:
    async with front.session() as http:
        async with http.post(f"{P}/sessions", data=JSON_CASES[case],
                             headers={"Content-Type": "application/json"}) as resp:
            assert resp.status == 400, await resp.text()
            assert (await resp.json())["detail"]["error"] in ("invalid_json", "nesting_too_deep")
    still_serving(front)


async def test_deeply_nested_data_part_is_400(front: Front) -> None:
    async with front.session() as http:
        async with http.post(f"{P}/sessions", json={"title": "deep"}) as resp:
            session = (await resp.json())["id"]
        body = b'{"parts": [{"kind": "data", "data": {"a": ' + b"[" * 300 + b"]" * 300 + b"}}]}"
        async with http.post(f"{P}/sessions/{session}/runs", data=body,
                             headers={"Content-Type": "application/json"}) as resp:
            assert resp.status == 400
            assert (await resp.json())["detail"]["error"] == "nesting_too_deep"


async def test_capture_endpoint_is_not_relayed(front: Front) -> None:
    async with front.session() as http:
        async with http.post("/capture/v1/events", data=b'{"run_id": "x", "events": []}',
                             headers={"Content-Type": "application/json"}) as resp:
            assert resp.status == 404
            assert (await resp.json())["detail"]["error"] == "not_found"


async def test_request_id_is_echoed_and_forwarded(front: Front) -> None:
    async with front.session() as http:
        async with http.get(f"{P}/sessions", headers={"X-Request-Id": "trace-123"}) as resp:
            assert resp.status == 200 and resp.headers["X-Request-Id"] == "trace-123"
        async with http.get(f"{P}/sessions", headers={"X-Request-Id": "x" * 65}) as resp:
            assert resp.headers["X-Request-Id"].startswith("req_")



# -- other loopback binds -----------------------------------------------------------------------

@pytest.mark.parametrize("host", ["[::1]", "::1", "127.0.0.2"])
def test_a_front_on_another_loopback_address_answers_its_own_url(door_stack: Stack,
                                                                 host: str) -> None:
    other = start_front(door_stack, "--host", host)
    name = other.url.split("//", 1)[1].rsplit(":", 1)[0]
    assert name == ("[::1]" if ":" in host else host)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family) as sock:
        sock.settimeout(10)
        sock.connect((name.strip("[]"), other.port))
        sock.sendall(f"GET /health HTTP/1.1\r\nHost: {name}:{other.port}\r\nAuthorization: "
                     f"Bearer {other.token}\r\nConnection: close\r\n\r\n".encode())
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 200"), answer[:300]
    assert b"\r\nServer: llamon-playground\r\n" in answer  # and no versions


def test_a_405_says_which_methods_are_allowed(front: Front) -> None:
    answer = raw_request(front.port, f"PUT /health HTTP/1.1\r\nHost: 127.0.0.1:{front.port}\r\n"
                                     f"Authorization: Bearer {front.token}\r\n"
                                     "Content-Type: application/json\r\n"
                                     "Content-Length: 0\r\n\r\n".encode())
    assert answer.status == 405, answer
    assert "GET" in answer.headers.get("allow", ""), answer.headers
