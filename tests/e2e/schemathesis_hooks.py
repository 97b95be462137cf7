"""Schemathesis hooks for tests/e2e/test_openapi.py (loaded through SCHEMATHESIS_HOOKS).

- `follow=1` turns GET /host/logs into an endless SSE stream: the fuzzer must not ask for it.
- `answers_401`: the check of the run without a token (every answer must be 401).
- Integers beyond 64 bits are refused (`400 invalid_json`, docs/api.md): a free-form JSON
  object's schema cannot say so, so bodies holding one are not generated.
"""

from __future__ import annotations

from typing import Any

import schemathesis


@schemathesis.hook
def before_call(ctx: Any, case: Any, **kwargs: Any) -> None:
    if isinstance(case.query, dict):
        case.query.pop("follow", None)


INT_MIN, INT_MAX = -(2 ** 63), 2 ** 64 - 1


def _holds_a_huge_integer(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return not INT_MIN <= value <= INT_MAX
    if isinstance(value, float):
        return value.is_integer() and abs(value) >= 2.0 ** 63
    if isinstance(value, dict):
        return any(_holds_a_huge_integer(v) for v in value.values())
    if isinstance(value, list):
        return any(_holds_a_huge_integer(v) for v in value)
    return False


@schemathesis.hook
def filter_body(ctx: Any, body: Any) -> bool:
    return not _holds_a_huge_integer(body)


@schemathesis.check
def answers_401(ctx: Any, response: Any, case: Any) -> None:
    if response.status_code != 401:
        raise AssertionError(f"{case.method} {case.formatted_path} answered "
                             f"{response.status_code} without a token")
