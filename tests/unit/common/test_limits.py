"""The size estimate behind every JSON limit: exact for plain text, bounded in cost."""

from __future__ import annotations

import time

import orjson
import pytest

from llamon_playground.common.config import build_settings
from llamon_playground.common.limits import Limits, json_size_over
from llamon_playground.daemon.data.sizes import check_capture_event, check_metadata
from llamon_playground.daemon.errors import BadRequest, PayloadTooLarge

DOCS = [{"a": [1, 2, {"b": None, "c": True, "d": False}], "e": "é" * 10, "f": []}, {}, [],
        "x", {"k": {"z": [[]]}}, 1.5, -3, {"n": "日本" * 100},
        # Escapes count as stored: `\u0000` is 6 bytes, `\n` and `\"` 2.
        {"nul": "\u0000" * 100, "lines": "a\nb\"c\\" * 10, "ctl": "\x1f\t"}]


@pytest.mark.parametrize("doc", DOCS)
def test_the_estimate_is_the_size_orjson_writes(doc: object) -> None:
    size = len(orjson.dumps(doc))
    assert json_size_over(doc, size) is None
    assert json_size_over(doc, size - 1) is not None


def test_the_walk_stops_at_the_limit() -> None:
    huge = {"note": "-" * (64 << 20), "list": list(range(1_000_000))}
    started = time.process_time()
    for _ in range(100):
        assert json_size_over(huge, 256 * 1024) is not None
    # A bound of work, not of time: 100 checks of a 64 MiB value would take seconds if it
    # were walked or encoded; the estimate stops at the first string.
    assert time.process_time() - started < 5


def test_metadata_limits_and_their_codes() -> None:
    limits = Limits(metadata_bytes=100, metadata_value_bytes=40)
    check_metadata({"a": "-" * 38}, limits=limits)  # the value: 40 bytes
    with pytest.raises(PayloadTooLarge) as caught:
        check_metadata({"a": "-" * 39}, limits=limits)
    assert caught.value.code == "metadata_too_large"
    assert "LLAMON_PLAYGROUND_MAX_METADATA_VALUE_BYTES" in caught.value.message
    at_limit = {"a": "-" * 30, "b": "-" * 30, "c": ""}
    at_limit["c"] = "-" * (100 - len(orjson.dumps(at_limit)))
    assert len(orjson.dumps(at_limit)) == 100
    check_metadata(at_limit, limits=limits)
    with pytest.raises(PayloadTooLarge) as caught:
        check_metadata({**at_limit, "c": at_limit["c"] + "-"}, limits=limits)
    assert "LLAMON_PLAYGROUND_MAX_METADATA_BYTES" in caught.value.message


def test_capture_event_limits() -> None:
    limits = Limits(capture_events_per_run=2, name_chars=5, capture_event_bytes=60)
    check_capture_event({"type": "t", "node": "n" * 5}, 2, "e", limits)
    with pytest.raises(BadRequest) as bad:
        check_capture_event({"type": "t", "evaluator": "n" * 6}, 1, "e", limits)
    assert bad.value.code == "name_too_long"
    with pytest.raises(PayloadTooLarge) as big:
        check_capture_event({"type": "t", "x": "-" * 60}, 1, "e", limits)
    assert big.value.code == "capture_event_too_large"
    with pytest.raises(PayloadTooLarge) as many:
        check_capture_event({"type": "t"}, 3, "e", limits)
    assert many.value.code == "too_many_capture_events"


def test_every_limit_has_a_variable_read_into_the_settings(tmp_path: object) -> None:
    settings = build_settings("/tmp", {"LLAMON_PLAYGROUND_MAX_METADATA_BYTES": "1000",
                                       "LLAMON_PLAYGROUND_MAX_HOST_LOG_BYTES": "2048"})
    assert settings.limits.metadata_bytes == 1000
    assert settings.limits.host_log_bytes == 2048
    assert build_settings("/tmp", {}).limits == Limits()
