"""The Host logs panel before the Host wrote anything, and once it has: what it says, and no
serious axe-core violation in either state, light and dark. Its own stack, on which nothing
starts the Host before this test does, so the first state is there for sure."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from llamon_playground.harness.processes import Stack
from tests.browser.accessibility import blocking_violations
from tests.browser.helpers import button, expect


@contextmanager
def logs_open(browser: Any, page_stack: tuple[Stack, str], scheme: str) -> Iterator[Any]:
    """A logged-in page (axe-core let in) in `scheme`, its Host logs panel open."""
    stack, url = page_stack
    context = browser.new_context(viewport={"width": 1280, "height": 720}, bypass_csp=True,
                                  color_scheme=scheme)
    context.set_default_timeout(20_000)
    try:
        page = context.new_page()
        page.goto(f"{url}/?token={stack.token}")
        expect(page.locator("#connection")).to_have_attribute("data-state", "live")
        button(page, "Host logs").click()
        expect(page.get_by_role("region", name="Host logs panel")).to_be_visible()
        yield page
    finally:
        context.close()


def test_the_logs_panel_says_when_nothing_was_logged_yet(
        browser: Any, page_stack: tuple[Stack, str]) -> None:
    with logs_open(browser, page_stack, "dark") as dark, \
            logs_open(browser, page_stack, "light") as light:
        for page in (dark, light):
            expect(page.locator("#host-state")).to_have_attribute("data-state", "stopped")
            expect(page.get_by_text("Nothing logged yet")).to_be_visible()
            expect(page.get_by_role("log", name="Host log lines")).to_be_empty()
            assert not blocking_violations(page), blocking_violations(page)
        light.locator("#host-state").click()
        button(light, "Start Host").click()
        light.keyboard.press("Escape")
        for page in (light, dark):  # both panels follow: the lines arrive in each
            expect(page.locator("#host-state")).to_have_attribute("data-state", "ready")
            lines = page.get_by_role("log", name="Host log lines")
            expect(lines.locator(".log").first).to_be_visible()
            expect(page.get_by_text("Nothing logged yet")).to_be_hidden()
            assert not blocking_violations(page), blocking_violations(page)
