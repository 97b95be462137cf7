"""The page's footer: the history's size on disk and the retention policy, as `/health`
gives them (`history`: bytes, max_bytes, max_age_days), in a stack with a policy set; the
footer of a stack without one (the default) is in test_layout.py."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser.accessibility import blocking_violations
from tests.browser.helpers import expect, finished
from tests.support.procs import Stack

EXTRA_ENV = {"LLAMON_PLAYGROUND_HISTORY_MAX_BYTES": str(2 * 1024 ** 3),
             "LLAMON_PLAYGROUND_HISTORY_MAX_AGE_DAYS": "90"}
SIZE = r"[\d.]+ (bytes|KiB|MiB)"


def test_the_footer_shows_the_size_and_the_policy(page: Any, front_url: str) -> None:
    finished(page, "stream a run so history exists")
    page.reload()
    footer = page.get_by_role("contentinfo")
    expect(footer).to_have_text(re.compile(
        rf"^History: {SIZE} on disk\. Retention: at most 2\.0 GiB, 90 days at most; "
        r"the oldest unlabelled sessions go first\.$"))
    history = page.request.get(f"{front_url}/health").json()["history"]
    assert history["max_bytes"] == 2 * 1024 ** 3 and history["max_age_days"] == 90, history
    assert int(footer.get_attribute("data-bytes")) > 0


@pytest.fixture(params=["light", "dark"])
def scheme_page(request: pytest.FixtureRequest, browser: Any,
                page_stack: tuple[Stack, str]) -> Iterator[Any]:
    """A logged-in page in a context that lets axe-core in (bypass_csp) and in one scheme."""
    stack, url = page_stack
    context = browser.new_context(viewport={"width": 800, "height": 700}, bypass_csp=True,
                                  color_scheme=request.param)
    context.set_default_timeout(20_000)
    tab = context.new_page()
    tab.goto(f"{url}/?token={stack.token}")
    expect(tab.get_by_role("contentinfo")).to_contain_text("Retention")
    yield tab
    context.close()


def test_the_footer_has_no_serious_violation(scheme_page: Any) -> None:
    found = blocking_violations(scheme_page)
    assert not found, found
