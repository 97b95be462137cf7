"""Every view of the page, light and dark, has no serious or critical axe-core violation:
empty (and its skip link shown), a run, a failed run, an interrupted-by-cancel run, compare,
the Host logs panel, the Host panel, and the thread and sessions panels at 800 px."""

from __future__ import annotations

from typing import Any

from tests.browser.accessibility import blocking_violations
from tests.browser.helpers import button, expect, finished, pick_box, slow_run_streaming


def clean(page: Any, view: str) -> None:
    found = blocking_violations(page)
    assert not found, f"{view}: {found}"


def test_every_view_has_no_serious_violation(scheme_page: Any) -> None:
    page = scheme_page
    clean(page, "empty")
    page.keyboard.press("Tab")
    expect(page.get_by_role("link", name="Skip to message")).to_be_focused()
    clean(page, "skip link shown")
    view, first = finished(page, "stream hello world")
    view.get_by_text("Trace and scores").click()
    clean(page, "run with trace")
    failed, second = finished(page, "fail", "failed")
    expect(failed.get_by_role("region", name="Diagnostics")).to_be_visible()
    clean(page, "failed run")
    cancelled, _ = slow_run_streaming(page, 1)
    button(page, "Cancel").click()
    expect(cancelled).to_have_attribute("data-status", "cancelled")
    clean(page, "cancelled run")
    pick_box(page, first).check()
    pick_box(page, second).check()
    button(page, "Compare").click()
    expect(page.locator(".compare-view")).to_be_visible()
    clean(page, "compare")
    button(page, "Host logs").click()
    expect(page.get_by_role("region", name="Host logs panel")).to_be_visible()
    clean(page, "Host logs")
    page.locator("#host-state").click()
    clean(page, "Host panel")
    page.keyboard.press("Escape")
    page.set_viewport_size({"width": 800, "height": 700})
    button(page, "Thread").click()
    expect(page.locator(".run-card").first).to_be_visible()  # with the Host logs open too
    clean(page, "narrow thread")
    button(page, "Sessions").click()
    clean(page, "narrow sessions")
