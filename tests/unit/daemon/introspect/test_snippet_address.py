"""Where a run's snippet is sent and in which protocol version: the whole table."""

from __future__ import annotations

from typing import Any

import pytest

from llamon_playground.daemon.a2a.wire import V03, V1, Interface
from llamon_playground.daemon.introspect.service import snippet_address

BASE = "http://127.0.0.1:4100"
CARD_V1 = Interface(BASE + "/a2a/v1", V1)
CARD_V03 = Interface(BASE + "/a2a/v03", V03)


@pytest.mark.parametrize(("run", "base_url", "interface", "expected"), [
    # The run's own version wins; the card's interface only when it speaks that version.
    ({"a2a_version": V03}, BASE, CARD_V03, (CARD_V03.url, V03)),
    ({"a2a_version": V03}, BASE, CARD_V1, (BASE + "/", V03)),
    ({"a2a_version": V1}, BASE, None, (BASE + "/", V1)),
    # A run that never reached a Host: the version the card offers now, else 1.0.
    ({}, BASE, CARD_V03, (CARD_V03.url, V03)),
    ({"a2a_version": None}, BASE, None, (BASE + "/", V1)),
    # No Ready Host: no address, the version still chosen.
    ({"a2a_version": V03}, None, None, (None, V03)),
    ({}, None, None, (None, V1)),
])
def test_snippet_address(run: dict[str, Any], base_url: str | None,
                         interface: Interface | None, expected: tuple[str | None, str]) -> None:
    assert snippet_address(run, base_url, interface) == expected
