"""The Host helper's door: which requests LoopbackGuard lets through."""

from __future__ import annotations

from llamon_playground.host_manager.host_side.capture import refusal

JSON = {"content-type": "application/json; charset=utf-8"}


def test_the_daemons_requests_pass() -> None:
    for host in ("127.0.0.1:4242", "localhost:4242", "[::1]:4242", "LOCALHOST:4242"):
        assert refusal({"host": host}, "GET", 4242) is None
        assert refusal({"host": host, **JSON}, "POST", 4242) is None
    same_origin = {"host": "127.0.0.1:4242", "origin": "http://127.0.0.1:4242", **JSON}
    assert refusal(same_origin, "POST", 4242) is None


def test_what_a_web_page_can_send_is_refused() -> None:
    codes = {
        "no host": refusal({}, "GET", 4242),
        "rebound name": refusal({"host": "attacker.example:4242"}, "GET", 4242),
        "other port": refusal({"host": "127.0.0.1:4243"}, "GET", 4242),
        "foreign origin": refusal({"host": "127.0.0.1:4242", "origin": "https://a.example",
                                   **JSON}, "POST", 4242),
        "other port origin": refusal({"host": "127.0.0.1:4242",
                                      "origin": "http://127.0.0.1:8080", **JSON}, "POST", 4242),
        "cross-site fetch": refusal({"host": "127.0.0.1:4242", "sec-fetch-site": "cross-site"},
                                    "GET", 4242),
        "text/plain": refusal({"host": "127.0.0.1:4242", "content-type": "text/plain"},
                              "POST", 4242),
        "no type": refusal({"host": "127.0.0.1:4242"}, "POST", 4242),
    }
    assert {k: v[0] if v else None for k, v in codes.items()} == {
        "no host": 403, "rebound name": 403, "other port": 403, "foreign origin": 403,
        "other port origin": 403, "cross-site fetch": 403, "text/plain": 415, "no type": 415}
