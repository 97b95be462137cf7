"""An import body is parsed by rules no looser than every other body's."""

from __future__ import annotations

import orjson
import pytest

from llamon_playground.daemon.data import bundle_json
from llamon_playground.daemon.data.bundle_json import (
    MAX_VALUES,
    dump_bundle,
    has_surrogate_escape,
    parse_bundle_body,
    value_bound,
)
from llamon_playground.daemon.errors import BadRequest, PayloadTooLarge


@pytest.mark.parametrize("raw", [
    b'{"n": NaN}', b'{"n": Infinity}', b'{"n": 1e400}', b'{"n": 18446744073709551616}',
    b'{"n": -9223372036854775809}', b'{"n": 1' + b"0" * 5000 + b"}",
    b'{"s": "\\ud800"}', b'\xef\xbb\xbf{}', b'{"s": "\xff"}', b"[" * 5000 + b"]" * 5000,
    b'{"a": 1', b"{} {}",
])
def test_what_orjson_refuses_is_refused(raw: bytes) -> None:
    with pytest.raises(BadRequest) as caught:
        parse_bundle_body(raw)
    assert caught.value.code == "invalid_json"


def test_what_orjson_takes_is_taken_exactly() -> None:
    raw = (b'{"big": 18446744073709551615, "small": -9223372036854775808, "f": 0.5, '
           b'"pair": "\\ud83d\\ude00", "u": "\xc3\xa9", "n": null, "t": [true, false]}')
    assert parse_bundle_body(raw) == {
        "big": 2 ** 64 - 1, "small": -(2 ** 63), "f": 0.5, "pair": "\U0001F600", "u": "é",
        "n": None, "t": [True, False]}
    assert parse_bundle_body(b"  ") is None


def test_the_value_count_is_an_upper_bound_checked_before_parsing() -> None:
    assert value_bound(b'{"a": [1, 2, {}], "b": "x,y"}') >= 6
    raw = b"[" + b",".join([b"0"] * MAX_VALUES) + b"]"
    with pytest.raises(PayloadTooLarge) as caught:
        parse_bundle_body(raw)
    assert caught.value.code == "bundle_too_large"


# The scans over a body go a slice at a time (the GIL is not held for a 200 MB scan); with
# tiny slices, every cut below falls inside what is being looked for.

def test_the_value_count_is_the_same_in_slices(monkeypatch: pytest.MonkeyPatch) -> None:
    raw = b'{"a": [1, 2, {}], "b": "x,y", "c": [[{}, {}], []]}'
    whole = raw.count(b",") + raw.count(b"{") + raw.count(b"[") + 1
    monkeypatch.setattr(bundle_json, "SLICE", 3)
    assert value_bound(raw) == whole
    assert value_bound(bytearray(raw)) == whole


@pytest.mark.parametrize("cut", range(1, 9))
def test_a_surrogate_escape_cut_by_a_slice_is_still_seen(
        monkeypatch: pytest.MonkeyPatch, cut: int) -> None:
    monkeypatch.setattr(bundle_json, "SLICE", cut)
    assert has_surrogate_escape(b'{"s": "\\ud800"}')
    assert has_surrogate_escape(bytearray(b'xxxxxxx\\uDfff'))
    assert not has_surrogate_escape(b'{"s": "\\u00e9 \\ud7ff"}')
    with pytest.raises(BadRequest):
        parse_bundle_body(b'{"s": "\\udc00"}')


def test_an_export_dumped_in_pieces_is_byte_for_byte_one_dump(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bundle_json, "EVENTS_SLICE", 3)
    doc = {"format": "f", "empty_list": [], "empty_dict": {}, "n": None,
           "sessions": [{"id": "s1", "title": "é \U0001F600 \"q\""}],
           "events": [{"seq": i, "payload": {"text": f"t{i}", "l": [i, {"k": 0.5}]}}
                      for i in range(10)],
           "blobs": {"a" * 64: {"bytes_base64": "QUJD", "size": 3}, "b" * 64: {"size": 0}}}
    assert dump_bundle(doc) == orjson.dumps(doc)
    assert orjson.loads(dump_bundle(doc)) == doc
