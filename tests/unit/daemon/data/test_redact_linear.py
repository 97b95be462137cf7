"""Redaction runs in linear time on adversarial input of the largest size a string may have.

A pattern that rescans the rest of a string from every candidate start turns one request
into seconds or minutes of a blocked event loop. Each input below repeats a fragment that
begins a secret pattern but never completes it. The bound is relative, measured beside a
plain linear pass (a character-class scan) over the same string in the same process, so a
slow machine moves both sides; a quadratic pattern is thousands of times over it at this
size, a linear one stays within a small factor.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable

import pytest

from llamon_playground.daemon.data.redact import is_secret_key, redact_string

SIZE = 1024 * 1024  # a string of 1 MiB: larger than any one value a Studio sends
BOUND = 50.0  # x a linear pass; measured here 2x to 16x, a quadratic pattern is >1000x
LINEAR = re.compile(r".", re.DOTALL)  # one match per character: a plain linear pass
# Fragments that start a pattern of redact.py and never complete it.
FRAGMENTS = ["-eyJ", ".eyJ", "eyJaaaaa.", "sk-", "Bearer ", "://a:", "://", "?a", "&a=",
             "a@", "ghp_", "github_pat_", "xoxa-", "AKIA", "AIza", "aB", " ", "-",
             "Basic ", "Basic aGk6", "-----BEGIN PRIVATE KEY-----", "-----BEGIN RSA ",
             "-----BEGIN PRIVATE KEY-----\nMII-", "-----", "password=", "password: ",
             "\"passwd\"", "pwd ", "api_key", "glpat-", "rk_live_", "sk_test_"]


def best_of(action: Callable[[], object], rounds: int = 3) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return min(times)


@pytest.mark.parametrize("fragment", FRAGMENTS)
def test_redaction_is_linear_on_repeated_fragments(fragment: str) -> None:
    value = fragment * (SIZE // len(fragment))
    linear = best_of(lambda: LINEAR.findall(value))
    limit = BOUND * max(linear, 1e-4)
    # Timed again only when over the bound (up to 3 rounds): a linear pattern that lost the
    # core to another process once passes on the next round, a quadratic one never does.
    took = best_of(lambda: (redact_string(value), is_secret_key(value)), rounds=1)
    for _ in range(2):
        if took <= limit:
            break
        took = min(took, best_of(lambda: (redact_string(value), is_secret_key(value)),
                                 rounds=1))
    assert took <= limit, (fragment, took, linear)


def test_the_jwt_pattern_still_finds_a_token_after_a_separator() -> None:
    jwt = ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c")
    for text in (jwt, f"token={jwt}", f"'{jwt}'", f"a {jwt} b", f"x.{jwt}"):
        assert "eyJ" not in redact_string(text), text
