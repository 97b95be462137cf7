"""Schemathesis hooks for tests/e2e/test_openapi.py (loaded through SCHEMATHESIS_HOOKS).

- `follow=1` turns GET /host/logs into an endless SSE stream: the fuzzer must not ask for it.
- `answers_401`: the check of the run without a token (every answer must be 401).
"""

from __future__ import annotations

from typing import Any

import schemathesis


@schemathesis.hook
def before_call(ctx: Any, case: Any, **kwargs: Any) -> None:
    if isinstance(case.query, dict):
        case.query.pop("follow", None)


@schemathesis.check
def answers_401(ctx: Any, response: Any, case: Any) -> None:
    if response.status_code != 401:
        raise AssertionError(f"{case.method} {case.formatted_path} answered "
                             f"{response.status_code} without a token")
