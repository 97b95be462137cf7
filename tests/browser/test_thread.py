"""The session as a conversation: oldest turn on top, the newest at the bottom by the
composer and in view; each turn shows what was sent and the answer; a resume
is the turn after the question it answered, with that question above it; an edited rerun
says what it repeats and which fields changed."""

from __future__ import annotations

from typing import Any

from llamon_playground.common.contract import API_PREFIX
from tests.browser.helpers import button, expect, finished, pick_box, send


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
    # Oldest first: the resume is the turn right below the question it answered.
    ids = page.locator(".run-card").evaluate_all("cards => cards.map((c) => c.dataset.runId)")
    assert ids.index(resumed.get_attribute("data-run-id")) == ids.index(parent) + 1, ids

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
    pick_box(page, newer).check()
    pick_box(page, older).check()
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


def turn_ids(page: Any) -> list[str]:
    return list(page.locator(".run-card").evaluate_all("cs => cs.map((c) => c.dataset.runId)"))


def test_the_thread_reads_down_to_the_newest_turn_by_the_composer(page: Any, front_url: str) -> None:
    sent = []
    for n in range(6):  # more turns than the list shows at 1280 x 720
        _, run_id = finished(page, f"stream turn {n}")
        sent.append(run_id)
        newest = card(page, run_id)
        expect(page.locator(".run-card").last).to_have_attribute("data-run-id", run_id)
        expect(newest).to_be_in_viewport(ratio=0.9)  # followed: the reader was at the end
    assert turn_ids(page) == sent  # chronological
    run_list = page.locator("#run-list")
    assert run_list.evaluate("l => l.scrollHeight > l.clientHeight")
    list_box, composer_box = run_list.bounding_box(), page.locator("#composer").bounding_box()
    assert list_box is not None and composer_box is not None
    assert list_box["y"] + list_box["height"] <= composer_box["y"] + 1  # the composer is below

    # A reader who scrolled up to the first turn is not moved by another client's run...
    run_list.evaluate("l => { l.scrollTop = 0; }")
    expect(card(page, sent[0])).to_be_in_viewport(ratio=0.9)
    session = page.request.get(f"{front_url}{API_PREFIX}/runs/{sent[0]}").json()["session_id"]
    late = page.request.post(f"{front_url}{API_PREFIX}/sessions/{session}/runs",
                             data={"parts": [{"kind": "text", "text": "stream late"}]}
                             ).json()["run_id"]
    expect(page.locator(".run-card").last).to_have_attribute("data-run-id", late)
    assert run_list.evaluate("l => l.scrollTop") == 0
    expect(card(page, sent[0])).to_be_in_viewport(ratio=0.9)
    expect(card(page, late)).to_have_attribute("data-status", "completed")
    # ... but a message sent from the page brings its turn into view, wherever they read.
    _, mine = finished(page, "stream mine")
    expect(card(page, mine)).to_be_in_viewport(ratio=0.9)

    # Opening the session again shows its end.
    page.reload()
    page.locator(".session-item", has_text="stream turn 0").click()
    expect(card(page, mine)).to_be_in_viewport(ratio=0.9)
    # A link to an older run shows that run's turn in the thread.
    page.goto(page.url.split("#")[0] + f"#{sent[0]}")
    page.reload()
    expect(page.locator("article.run-view")).to_have_attribute("data-run-id", sent[0])
    expect(card(page, sent[0])).to_be_in_viewport(ratio=0.9)
    expect(card(page, sent[0])).to_have_attribute("aria-current", "true")
    page.evaluate(f"location.hash = '#{sent[5]}'")  # a link within the page
    expect(page.locator("article.run-view")).to_have_attribute("data-run-id", sent[5])
    expect(card(page, sent[5])).to_be_in_viewport(ratio=0.9)


def test_a_resume_stays_right_after_the_question_it_answers(page: Any) -> None:
    _, asked = finished(page, "ask", "input_required")
    button(page, "New message instead").click()  # else the composer answers the question
    _, between = finished(page, "stream meanwhile")
    card(page, asked).click()
    view = page.locator(f"article.run-view[data-run-id='{asked}']")
    view.get_by_label("Your answer").fill("Grace")
    view.get_by_label("Your answer").press("Enter")
    resumed = page.locator("article.run-view")
    expect(resumed).not_to_have_attribute("data-run-id", asked)
    expect(resumed).to_have_attribute("data-status", "completed")
    child = resumed.get_attribute("data-run-id")
    expect(page.locator(".run-card")).to_have_count(3)
    assert turn_ids(page) == [asked, child, between]  # not after the newer turn
