"""An import body is parsed by rules no looser than every other body's."""

from __future__ import annotations

import pytest

from llamon_playground.daemon.data.bundle_json import MAX_VALUES, parse_bundle_body, value_bound
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
