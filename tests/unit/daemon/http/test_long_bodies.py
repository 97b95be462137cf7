"""A request body over a MiB is parsed with its long strings cut out and decoded a slice at
a time (daemon/http/util.py, parse_long_json): it must read exactly as the whole parse
(orjson) reads it, a repeated key included."""

from __future__ import annotations

import orjson

from llamon_playground.daemon.data.long_strings import THRESHOLD
from llamon_playground.daemon.http.util import parse_long_json

SHORT = "é" * (THRESHOLD // 2 - 1)  # just under the threshold as UTF-8: parsed in place
LONG = "\\u00e9" * (THRESHOLD // 2 - 1)  # the same text escaped: cut out, put back


def test_a_repeated_key_keeps_its_last_value_whichever_spelling_is_long() -> None:
    for raw in (
        f'{{"{SHORT}": "", "{LONG}": "", "{SHORT}": [1, {{}}]}}'.encode(),
        f'{{"{SHORT}": "", "{LONG}"{" " * 100}\n: "", "{SHORT}": [1, {{}}]}}'.encode(),
        f'{{"{LONG}": 1, "{SHORT}": 2}}'.encode(),
        f'{{"parts": [{{"{SHORT}": 1, "{LONG}": {{"{LONG}": 3}}, "x": "{LONG}"}}]}}'.encode(),
    ):
        assert parse_long_json(raw) == orjson.loads(raw)


def test_a_long_value_reads_back_whole() -> None:
    raw = f'{{"text": "{LONG}", "n": 1}}'.encode()
    assert parse_long_json(raw) == {"text": SHORT, "n": 1}
