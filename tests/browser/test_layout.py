"""One layout from 1440 to 800 px: below 1100 px the columns become panels picked in the
header, and no pane cuts its text; the keyboard reaches the Message box first, Escape
closes panels, `?` lists the shortcuts; disabled controls look disabled; a load logs no
console error."""

from __future__ import annotations

import re
from typing import Any

from tests.browser.helpers import button, expect, finished, pick_box

CUT = """() => [...document.querySelectorAll('.top, .columns > *')]
  .filter((pane) => pane.offsetParent !== null || pane.matches('.top'))
  .filter((pane) => pane.scrollWidth > pane.clientWidth)
  .map((pane) => `${pane.className}: ${pane.scrollWidth} > ${pane.clientWidth}`)"""


def test_at_800_px_one_panel_at_a_time_and_nothing_cut(page: Any) -> None:
    page.set_viewport_size({"width": 800, "height": 700})
    view, _ = finished(page, "stream a rather long message to see how the narrow layout holds")
    view.get_by_text("Trace and scores").click()
    panels = page.get_by_role("group", name="Panels")
    expect(panels).to_be_visible()
    expect(page.get_by_role("region", name="Run view")).to_be_visible()
    expect(page.get_by_role("main", name="Session")).to_be_hidden()  # one panel at a time
    assert page.evaluate(CUT) == []
    for name, landmark in (("Thread", ("main", "Session")), ("Sessions", ("navigation", "Sessions")),
                           ("Run", ("region", "Run view"))):
        panels.get_by_role("button", name=name).click()
        expect(page.get_by_role(landmark[0], name=landmark[1])).to_be_visible()
        assert page.evaluate(CUT) == [], name
    page.set_viewport_size({"width": 1440, "height": 900})
    expect(panels).to_be_hidden()  # wide: the three columns again
    expect(page.get_by_role("main", name="Session")).to_be_visible()
    expect(page.get_by_role("navigation", name="Sessions")).to_be_visible()


def test_keyboard_reaches_message_first_and_escape_closes_panels(page: Any) -> None:
    expect(page.locator("#connection")).to_have_attribute("data-state", "live")
    page.locator("body").focus()
    message = page.get_by_label("Message")
    # The first Tab stop is the skip link, shown while focused; Enter goes to the Message box.
    skip = page.get_by_role("link", name="Skip to message")
    page.keyboard.press("Tab")
    expect(skip).to_be_focused()
    expect(skip).to_be_in_viewport()
    page.keyboard.press("Enter")
    expect(message).to_be_focused()
    # What Tab goes through is the order on screen: the header, the sessions, the thread,
    # the composer, then the run (document order, no CSS reordering).
    order = page.evaluate("""() => {
        const at = (sel) => document.querySelector(sel);
        const parts = ['header.top', 'nav.sessions', '#run-list', '#composer', '#run-pane'];
        return parts.map(at).every((node, i, all) => i === 0
          || (all[i - 1].compareDocumentPosition(node) & Node.DOCUMENT_POSITION_FOLLOWING));
      }""")
    assert order
    assert page.evaluate("""() => [...document.querySelectorAll('*')].every(
        (n) => ['0', 'normal'].includes(getComputedStyle(n).order))""")
    skip.evaluate("s => s.blur()")
    expect(skip).not_to_be_in_viewport()
    page.locator("body").click(position={"x": 5, "y": 5})
    page.keyboard.press("?")
    shortcuts = page.get_by_role("dialog", name="Keyboard shortcuts")
    expect(shortcuts).to_be_visible()
    expect(shortcuts).to_contain_text("Escape")
    page.keyboard.press("Escape")
    expect(shortcuts).to_be_hidden()
    page.locator("#host-state").click()
    expect(page.get_by_role("region", name="Host")).to_be_visible()
    page.keyboard.press("Escape")
    expect(page.get_by_role("region", name="Host")).to_be_hidden()
    button(page, "Host logs").click()
    logs = page.get_by_role("region", name="Host logs panel")
    expect(logs).to_be_visible()
    page.keyboard.press("Escape")
    expect(logs).to_be_hidden()


def test_disabled_looks_disabled_and_the_header_names_the_project(page: Any) -> None:
    compare = button(page, "Compare")
    expect(compare).to_be_disabled()
    assert float(compare.evaluate("b => getComputedStyle(b).opacity")) < 1
    expect(page.locator("#project")).to_contain_text("echo_agent")
    # No session yet: no title box with Rename and Delete, but words saying what to do.
    expect(page.locator("#session-head")).to_be_hidden()
    expect(page.locator("#runs-empty")).to_contain_text("type a message")


def test_the_footer_says_history_has_no_retention_limit_by_default(page: Any) -> None:
    # The size and policy come from /health's `history` (a policy set: test_footer.py).
    expect(page.get_by_role("contentinfo")).to_have_text(re.compile(
        r"^History: [\d.]+ (bytes|KiB|MiB) on disk\. "
        r"No retention limit: history is kept until you delete it\.$"))


def test_a_load_logs_no_console_error(browser: Any, page_stack: Any) -> None:
    stack, url = page_stack
    context = browser.new_context()
    tab = context.new_page()
    errors: list[str] = []
    tab.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    tab.goto(f"{url}/?token={stack.token}")
    expect(tab.locator("#connection")).to_have_attribute("data-state", "live")
    expect(tab.locator("#host-state")).not_to_have_text("Host: …")
    tab.reload()
    expect(tab.locator("#connection")).to_have_attribute("data-state", "live")
    context.close()
    assert errors == []


def test_the_first_entry_notice_shows_once_per_project_and_from_help(page: Any) -> None:
    welcome = page.get_by_role("region", name="About this Playground")
    expect(welcome).to_be_visible()
    expect(welcome).to_contain_text(".llamon/playground/playground.sqlite3")
    expect(welcome).to_contain_text("rights")
    button(page, "Got it").click()
    expect(welcome).to_be_hidden()
    page.reload()
    expect(page.locator("#project")).to_contain_text("echo_agent")
    expect(welcome).to_be_hidden()  # dismissed for this project
    button(page, "Help").click()
    expect(welcome).to_be_visible()
    page.keyboard.press("Escape")
    expect(welcome).to_be_hidden()


def test_the_text_composer_offers_the_agent_cards_examples(page: Any) -> None:
    finished(page, "stream warm up")  # a Ready Host: its card is read
    examples = page.get_by_role("group", name="Examples")
    expect(examples).to_be_visible()
    example = examples.get_by_role("button", name="stream hello world", exact=True)
    expect(example).to_be_visible()
    example.click()
    expect(page.get_by_label("Message")).to_have_value("stream hello world")
    expect(page.get_by_label("Message")).to_be_focused()


def test_runs_are_named_ids_are_whole_and_file_pickers_are_buttons(page: Any) -> None:
    _, older = finished(page, "stream named by what was sent")
    view, newer = finished(page, "stream and another one")
    # The run view's heading is what was sent (as the thread says it); the id under it.
    expect(view.locator(".run-head h2")).to_have_text("stream and another one")
    expect(view.locator(".run-head .run-id")).to_have_text(newer)
    # Compare shows each id whole, on one line of its own.
    for run_id in (newer, older):
        pick_box(page, run_id).check()
    button(page, "Compare").click()
    ids = page.get_by_role("article", name="Compare").locator(".run-id")
    expect(ids).to_have_text([older, newer])
    assert ids.evaluate_all("""ids => ids.every((i) => i.getClientRects().length === 1
        && i.scrollWidth <= i.clientWidth + 1)""")
    # A file picker reads as the button beside it, its name whole: no cut "No file chosen".
    for name in ("Import bundle", "Attach files"):
        picker = page.locator("label.file-button", has_text=name)
        assert picker.evaluate("l => l.scrollWidth <= l.clientWidth"), name
        assert picker.locator("input[type=file]").evaluate(
            "i => getComputedStyle(i).opacity === '0'"), name
    import_label = page.locator("label.file-button", has_text="Import bundle")
    export = button(page, "Export 2 picked runs")
    assert import_label.evaluate("l => l.getBoundingClientRect().width") == export.evaluate(
        "b => b.getBoundingClientRect().width")
