"""Compare of real runs of the example Host: text, data, file and score rows."""

from __future__ import annotations

from tests.e2e.data_support import finished_run, inline_file, sha, text
from tests.support.api import Api


# One daemon for both: each compares only runs it made.
async def test_compare_two_real_runs(module_api: Api) -> None:
    api = module_api
    first = await api.session()
    # The example Host reports two evaluators for `stream` through the capture channel:
    # word_count (score = words, on node "echo") and mentions_hello (1.0 / 0.0).
    left = await finished_run(api, first, [text("stream hello a b"),
                                           inline_file(b"one", "f.txt")])
    right = await finished_run(api, first, [text("stream a x b c"),
                                            inline_file(b"two", "f.txt")])

    got = await api.ok("GET", f"compare?left={left['id']}&right={right['id']}")
    assert got["automatic_verdict"] is None
    assert (got["left"]["status"], got["right"]["status"]) == ("completed", "completed")
    assert got["duration_delta_ms"] == round(right["duration_ms"] - left["duration_ms"], 9)
    assert got["text"]["left"] == "hello a b" and got["text"]["right"] == "a x b c"
    assert "-hello a b\n+a x b c\n" in got["text"]["unified_diff"]
    assert got["input"]["files"][0]["same_content"] is False
    assert got["input"]["files"][0]["left"]["sha256"] == sha(b"one")
    assert got["input"]["files"][0]["changed"] == ["sha256"]
    assert got["scores"] == [
        {"evaluator": "word_count", "scope": "node", "node": "echo", "left": 3, "right": 4,
         "delta": 1.0, "left_pass_status": "pass", "right_pass_status": "pass"},
        {"evaluator": "mentions_hello", "scope": None, "node": None, "left": 1.0,
         "right": 0.0, "delta": -1.0, "left_pass_status": "pass",
         "right_pass_status": "fail"}]

    # Runs of different sessions compare fine: data (the report echoes its input) and files.
    second = await api.session()
    data_1 = await finished_run(api, first, [text("data"), {"kind": "data", "data": {"q": 1}}])
    data_2 = await finished_run(api, second, [text("data"),
                                              {"kind": "data", "data": {"q": 2, "new": [1]}}])
    got = await api.ok("GET", f"compare?left={data_1['id']}&right={data_2['id']}")
    assert got["left"]["session_id"] != got["right"]["session_id"]
    assert got["data"]["changes"] == [
        {"part": 0, "path": "/input/q", "op": "replace", "left": 1, "right": 2},
        {"part": 0, "path": "/input/new", "op": "add", "left": None, "right": [1]}]
    local, external = got["files"]
    assert local["same_content"] is True and local["changed"] == []
    assert local["left"]["name"] == "hello.txt" and local["left"]["size"] == 22
    assert external["same_content"] is None  # a URI is never downloaded: unknown
    assert external["left"]["uri"] == "https://example.invalid/report.pdf"

    got = await api.ok("GET", f"compare?left={data_1['id']}&right={left['id']}")
    assert [row["same_content"] for row in got["files"]] == [False, False]
    assert got["files"][0]["right"] is None
    assert got["data"]["changes"][0]["path"] == "" and got["data"]["changes"][0]["op"] == "remove"
    assert got["text"]["left"] == "" and got["text"]["right"] == "hello a b"
    # `data` reports no evaluators: that side is null, never zero, and so is the delta.
    assert [(r["evaluator"], r["left"], r["right"], r["delta"]) for r in got["scores"]] == [
        ("word_count", None, 3, None), ("mentions_hello", None, 1.0, None)]


async def test_compare_unknown_or_missing_ids(module_api: Api) -> None:
    api = module_api
    session = await api.session()
    run = await finished_run(api, session, [text("stream hi")])
    for query, side in [(f"left=run_nope&right={run['id']}", "left"),
                        (f"left={run['id']}&right=run_nope", "right")]:
        code, doc = await api.call("GET", f"compare?{query}")
        assert code == 404 and doc["detail"]["error"] == "run_not_found"
        assert doc["detail"]["side"] == side
    for query in ["", f"left={run['id']}", f"right={run['id']}&left="]:
        code, doc = await api.call("GET", f"compare?{query}")
        assert code == 400 and doc["detail"]["error"] == "invalid_request"
