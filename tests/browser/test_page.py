"""The Playground page in a real Chromium, against the real daemon, front and echo_agent."""

from __future__ import annotations

import re
from typing import Any

from tests.browser.helpers import XSS, accept_dialogs, button, expect, expect_rerun, finished, send


def test_page_loads_with_the_cookie_and_a_strict_csp(page: Any, front_url: str,
                                                     browser: Any) -> None:
    # The token was in the first URL only: the front set the cookie and sent us to "/".
    assert page.url == f"{front_url}/"
    expect(page.get_by_role("heading", name="llamon Playground")).to_be_visible()
    expect(page.locator("#host-state")).to_contain_text("Host:")
    response = page.request.get(f"{front_url}/", headers={"Accept": "text/html"})
    csp = response.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "connect-src 'self'" in csp, csp
    assert "unsafe-inline" not in csp and "default-src 'none'" in csp, csp
    assert response.headers["x-content-type-options"] == "nosniff"
    # Without the cookie, the page is not served: a browser is told how to log in.
    stranger = browser.new_context()
    try:
        door = stranger.new_page()
        assert door.goto(f"{front_url}/").status == 401
        expect(door.get_by_role("heading", name="llamon Playground")).to_be_visible()
        expect(door.locator("main")).to_contain_text("llamon-playground token")
        assert door.locator("#composer").count() == 0
    finally:
        stranger.close()


def test_a_stream_is_replaced_by_the_final_parts_once(page: Any) -> None:
    view = send(page, "stream hello world")
    expect(view).to_have_attribute("data-status", "completed")
    answer = view.locator(".answer")
    expect(answer).to_have_attribute("data-source", "final")
    expect(answer).to_have_text("hello world")
    expect(view.locator(".stepper li[data-phase=send]")).to_have_attribute("data-state",
                                                                            "completed")
    expect(view.locator(".badge")).to_have_text("evaluator 2 · fail 0")
    # The history shows the run as a card.
    card = page.locator(f".run-card[data-run-id='{view.get_attribute('data-run-id')}']")
    expect(card).to_contain_text("completed")


def test_cancel_a_slow_run_after_it_streamed(page: Any) -> None:
    view = send(page, "slow")
    answer = view.locator(".answer")
    expect(answer).to_have_attribute("data-source", "stream")  # deltas painted as they come
    expect(answer).not_to_have_text("")
    button(page, "Cancel").click()
    expect(view).to_have_attribute("data-status", "cancelled")
    expect(view.locator(".reason")).to_have_text("user_cancelled")
    expect(button(page, "Cancel")).to_have_count(0)


def test_resume_an_ask_run(page: Any) -> None:
    view = send(page, "ask")
    expect(view).to_have_attribute("data-status", "input_required")
    expect(view.locator(".question")).to_have_text("What is your name?")
    first = view.get_attribute("data-run-id")
    page.get_by_label("Your answer").fill("Ada")
    button(page, "Resume").click()
    expect(view).not_to_have_attribute("data-run-id", first)
    expect(page.locator("article.run-view")).to_have_attribute("data-status", "completed")
    expect(page.locator("article.run-view .answer")).to_have_text("Hello, Ada!")
    expect(page.locator("article.run-view .facts")).to_contain_text(f"resumes {first}")


def test_rerun_and_label(page: Any) -> None:
    _, first = finished(page, "stream once more")
    button(page, "Rerun").click()
    rerun = expect_rerun(page, first, "once more")
    page.get_by_label("Run label").fill("second try")
    button(page, "Label").click()
    expect(rerun.locator("h2")).to_have_text("second try")
    expect(page.locator(".run-card .label")).to_have_text(["second try"])


def test_a_failed_run_shows_its_diagnostics(page: Any) -> None:
    view = send(page, "fail")
    expect(view).to_have_attribute("data-status", "failed")
    diagnostics = view.get_by_role("region", name="Diagnostics")
    expect(diagnostics.locator("h3")).to_have_text("failed: host_error")
    expect(diagnostics.locator(".message")).to_contain_text("echo_agent was asked to fail")
    expect(diagnostics.locator(".log-tail")).not_to_have_text("")


def test_agent_output_and_names_are_text_never_html(page: Any) -> None:
    view = send(page, f"stream {XSS}")
    expect(view).to_have_attribute("data-status", "completed")
    expect(view.locator(".answer")).to_have_text(XSS)
    page.get_by_label("Run label").fill(XSS)
    button(page, "Label").click()
    expect(view.locator("h2")).to_have_text(XSS)
    page.get_by_label("Session title").fill(XSS)
    button(page, "Rename").click()
    expect(page.locator(".session-item[aria-current=true]")).to_contain_text(XSS)
    assert page.locator("img").count() == 0
    assert page.evaluate("window.__xss") is None


def test_session_create_rename_delete(page: Any) -> None:
    button(page, "New session").click()
    title = page.get_by_label("Session title")
    expect(title).to_have_value("untitled")
    title.fill("my session")
    button(page, "Rename").click()
    current = page.locator(".session-item[aria-current=true]")
    # No run yet: its last activity is its creation, today (a time, the date on hover).
    expect(current).to_have_text(re.compile(r"^my session \(0\) · \d\d:\d\d$"))
    expect(current.locator(".session-when")).to_have_attribute(
        "title", re.compile(r"^last activity \d{4}-\d\d-\d\dT"))
    accept_dialogs(page)
    button(page, "Delete session").click()
    expect(page.locator(".session-item", has_text="my session")).to_have_count(0)


def test_restart_host_from_the_page(page: Any) -> None:
    badge = page.locator("#host-state")
    expect(badge).to_have_attribute("data-state", "ready")
    before = int(badge.get_attribute("data-generation") or 0)
    button(page, "Restart Host").click()
    expect(badge).to_have_attribute("data-generation", str(before + 1))
    expect(badge).to_have_attribute("data-state", "ready")
