"""Request validation and A2A wire parsing (pure functions)."""

from __future__ import annotations

import base64

import pytest

from llamon_playground.daemon.a2a.wire import (
    V03,
    V1,
    choose_interface,
    normalize_state,
    parse_result,
)
from llamon_playground.daemon.data.parts import (
    MAX_INLINE_FILE_BYTES,
    parse_changed_files,
    parse_run_request,
)
from llamon_playground.daemon.errors import BadRequest, PayloadTooLarge


@pytest.mark.parametrize("path", ["/abs.py", "../x.py", "a/../../b.py", "a\\b.py", "", "a/\x00"])
def test_changed_files_outside_the_project_are_refused(path: str) -> None:
    with pytest.raises(BadRequest) as info:
        parse_changed_files([path])
    assert info.value.code == "invalid_changed_files"


def test_changed_files_are_normalized_and_deduplicated() -> None:
    assert parse_changed_files(["app/./nodes.py", "app/nodes.py", "b.py"]) == [
        "app/nodes.py", "b.py"]


def test_inline_file_is_decoded_and_pending_until_accepted() -> None:
    req = parse_run_request({"parts": [{"kind": "file", "name": "a", "bytes_base64":
                                        base64.b64encode(b"abc").decode()}]})
    assert req.files[0].data == b"abc"
    assert req.parts[0] == {"kind": "file", "sha256": None, "size": 3, "name": "a",
                            "mime": "application/octet-stream", "source": "input"}


def test_oversized_inline_file_is_413() -> None:
    big = "A" * (MAX_INLINE_FILE_BYTES * 4 // 3 + 8)
    with pytest.raises(PayloadTooLarge):
        parse_run_request({"parts": [{"kind": "file", "bytes_base64": big}]})


def test_uri_file_is_external_and_never_fetched() -> None:
    req = parse_run_request({"parts": [{"kind": "file", "uri": "http://127.0.0.1:9/x"}]})
    assert req.parts[0]["availability"] == "external" and not req.files


def test_interface_prefers_1_0_and_falls_back_to_0_3() -> None:
    both = {"supportedInterfaces": [
        {"protocolBinding": "JSONRPC", "protocolVersion": "0.3", "url": "http://h/old"},
        {"protocolBinding": "JSONRPC", "protocolVersion": "1.0", "url": "http://h/"}]}
    assert choose_interface(both, "http://h").version == V1
    old = {"supportedInterfaces": [both["supportedInterfaces"][0]]}
    assert choose_interface(old, "http://h").url == "http://h/old"
    assert choose_interface({"url": "http://h/x", "protocolVersion": "0.3"},
                            "http://h").version == V03


def test_states_normalize_across_versions() -> None:
    assert normalize_state("TASK_STATE_INPUT_REQUIRED") == "input_required"
    assert normalize_state("input-required") == "input_required"
    assert normalize_state("TASK_STATE_CANCELED") == normalize_state("canceled")


def test_parse_1_0_and_0_3_frames() -> None:
    ev = parse_result({"result": {"artifactUpdate": {
        "taskId": "t", "artifact": {"artifactId": "a", "parts": [{"text": "hi"}]},
        "append": True}}})
    assert (ev.type, ev.artifact_id, ev.append, ev.parts[0].text) == ("artifact", "a", True, "hi")
    ev = parse_result({"result": {"kind": "status-update", "taskId": "t",
                                  "status": {"state": "input-required", "message": {
                                      "parts": [{"kind": "text", "text": "name?"}]}}}})
    assert (ev.type, ev.state, ev.parts[0].text) == ("status", "input_required", "name?")
    ev = parse_result({"result": {"kind": "artifact-update", "artifact": {
        "artifactId": "a", "parts": [{"kind": "file", "file": {
            "bytes": base64.b64encode(b"x").decode(), "name": "n", "mimeType": "text/plain"}}]}}})
    assert ev.parts[0].raw == b"x" and ev.parts[0].mime == "text/plain"
    ev = parse_result({"error": {"code": -32603, "message": "boom"}})
    assert (ev.type, ev.error_code, ev.error_message) == ("error", -32603, "boom")
