"""The session as a conversation: each turn shows what was sent and an excerpt of the
answer; a resume is the turn after the question it answered, with that question above it;
an edited rerun says what it repeats and which fields changed."""

from __future__ import annotations

from typing import Any

from tests.browser.helpers import button, expect, finished, send


def card(page: Any, run_id: str) -> Any:
    return page.locator(f".run-card[data-run-id='{run_id}']")


def test_turns_show_input_answer_and_where_they_came_from(page: Any) -> None:
    _, first = finished(page, "stream red green")
    turn = card(page, first)
    expect(turn.locator(".turn-input")).to_have_text("you: stream red green")
    expect(turn.locator(".turn-answer")).to_contain_text("red green")
    _, second = finished(page, "stream blue")
    # Two messages, two turns told apart by what they said.
    expect(card(page, second).locator(".turn-input")).to_have_text("you: stream blue")

    asked, parent = finished(page, "ask", "input_required")
    answer = asked.get_by_label("Your answer")
    answer.fill("Ada")
    answer.press("Enter")  # Enter resumes
    child = page.locator("article.run-view")
    expect(child).not_to_have_attribute("data-run-id", parent)
    expect(child).to_have_attribute("data-status", "completed")
    resumed = card(page, child.get_attribute("data-run-id") or "")
    expect(resumed.locator(".turn-origin")).to_have_text("↳ answers: What is your name?")
    expect(resumed.locator(".turn-input")).to_have_text("you: Ada")
    # Newest first: the resume is the turn right above the question it answered.
    ids = page.locator(".run-card").evaluate_all("cards => cards.map((c) => c.dataset.runId)")
    assert ids.index(parent) == ids.index(resumed.get_attribute("data-run-id")) + 1, ids

    page.locator(f".run-card[data-run-id='{first}']").click()
    expect(page.locator("article.run-view")).to_have_attribute("data-run-id", first)
    button(page, "Edit and rerun").click()
    page.get_by_label("Message").fill("stream red blue")
    button(page, "Send").click()
    rerun = page.locator("article.run-view")
    expect(rerun).not_to_have_attribute("data-run-id", first)
    expect(rerun).to_have_attribute("data-status", "completed")
    expect(rerun.locator(".facts .edited")).to_contain_text("edited: parts")
    edited = card(page, rerun.get_attribute("data-run-id") or "")
    expect(edited.locator(".turn-origin")).to_contain_text("↻ rerun of stream red green")
    expect(edited.locator(".turn-origin")).to_contain_text("edited: parts")


def test_enter_saves_a_label(page: Any) -> None:
    view = send(page, "stream labelled")
    expect(view).to_have_attribute("data-status", "completed")
    label = view.get_by_label("Run label")
    label.fill("by enter")
    label.press("Enter")
    expect(view.locator(".run-head h2")).to_have_text("by enter")
    run_id = view.get_attribute("data-run-id")
    expect(card(page, run_id or "").locator(".label")).to_have_text("by enter")


def test_compare_puts_the_older_run_left_named_and_coloured(page: Any) -> None:
    _, older = finished(page, "stream alpha beta")
    _, newer = finished(page, "stream alpha gamma")
    # Picked newer first: the view still puts the older run on the left.
    page.get_by_role("checkbox", name=f"Pick {newer} to compare or export").check()
    page.get_by_role("checkbox", name=f"Pick {older} to compare or export").check()
    button(page, "Compare").click()
    view = page.get_by_role("article", name="Compare")
    expect(view.locator(".side-left h3")).to_have_text("older: stream alpha beta")
    expect(view.locator(".side-left .when")).to_contain_text(older)
    expect(view.locator(".side-right h3")).to_have_text("newer: stream alpha gamma")
    diff = view.locator("pre.diff")
    expect(diff.locator(".diff-line.head").first).to_have_text("--- older: stream alpha beta")
    expect(diff.locator(".diff-line.del")).to_have_text(["-alpha beta"])
    expect(diff.locator(".diff-line.add")).to_have_text(["+alpha gamma"])
    added, removed = (diff.locator(f".diff-line.{k}").evaluate("l => getComputedStyle(l).backgroundColor")
                      for k in ("add", "del"))
    assert added != removed  # coloured, and the sign is in the text as well
    expect(view.locator("table.scores thead")).to_contain_text("older")
