"""The page as a conversation: the composer answers the agent's question (a resume, no new
run), Edit and rerun is a mode one can leave, answers show their Markdown as elements (and
nothing an agent writes runs or loads), and a 409 leaves the draft where it was."""

from __future__ import annotations

import re
from typing import Any

from llamon_playground.common.contract import API_PREFIX
from tests.browser.accessibility import blocking_violations
from tests.browser.helpers import button, expect, finished, send

HOSTILE = ('markdown Look: <img src=x onerror="window.__xss=1"> and '
           '[click](javascript:window.__xss=2) and [data](data:text/html,<b>x</b>) and '
           '![pic](javascript:window.__xss=3) and <script>window.__xss=4</script> and '
           '[here](/api/v1/sessions) and [web](https://example.com/a)')


def runs_of(page: Any, front_url: str, session: str) -> list[dict[str, Any]]:
    return page.request.get(f"{front_url}{API_PREFIX}/sessions/{session}/runs").json()["runs"]


def test_the_composer_answers_the_agents_question(page: Any, front_url: str) -> None:
    view, asked = finished(page, "ask", "input_required")
    banner = page.locator("#composer-mode")
    expect(banner).to_contain_text("The agent asks: What is your name?")
    card = page.locator(f".run-card[data-run-id='{asked}']")
    expect(card.locator(".turn-answer")).to_contain_text("What is your name?")
    expect(card.locator(".waiting")).to_have_text("waiting for your answer")
    message = page.get_by_label("Message")
    message.fill("Grace")
    message.press("Control+Enter")
    # The answer resumed the question: the child run continues the same conversation.
    expect(view).not_to_have_attribute("data-run-id", asked)
    expect(view).to_have_attribute("data-status", "completed")
    expect(view.locator(".answer")).to_have_text("Hello, Grace!")
    expect(view.locator(".facts")).to_contain_text(f"resumes {asked}")
    session = page.request.get(f"{front_url}{API_PREFIX}/runs/{asked}").json()["session_id"]
    runs = runs_of(page, front_url, session)
    assert len(runs) == 2, runs  # the question and its answer, no third run
    assert {r["id"]: r.get("parent_run_id") for r in runs}[view.get_attribute("data-run-id")] == asked
    expect(banner).to_be_hidden()
    expect(message).to_have_value("")

    # Asked again, a person may still send a new message instead.
    finished(page, "ask", "input_required")
    expect(banner).to_contain_text("The agent asks")
    button(page, "New message instead").click()
    expect(banner).to_contain_text("the agent's question stays unanswered")
    other = send(page, "stream something else")
    expect(other).to_have_attribute("data-status", "completed")
    expect(other.locator(".facts")).not_to_contain_text("resumes")


def test_edit_mode_is_left_by_escape_cancel_and_another_run(page: Any) -> None:
    _, first = finished(page, "stream first words")
    _, second = finished(page, "stream second words")
    message = page.get_by_label("Message")
    message.fill("my draft")
    banner = page.locator("#composer-mode")

    button(page, "Edit and rerun").click()
    expect(banner).to_contain_text("Editing a rerun of stream second words")
    expect(message).to_have_value("stream second words")
    message.press("Escape")
    expect(banner).to_be_hidden()
    expect(message).to_have_value("my draft")  # the draft from before comes back

    button(page, "Edit and rerun").click()
    expect(banner).to_contain_text("Editing a rerun")
    button(page, "Cancel edit").click()
    expect(banner).to_be_hidden()
    expect(message).to_have_value("my draft")

    button(page, "Edit and rerun").click()
    expect(banner).to_contain_text("Editing a rerun")
    page.get_by_role("button", name='Open the run "stream first words"', exact=False).click()
    expect(page.locator("article.run-view")).to_have_attribute("data-run-id", first)
    expect(banner).to_be_hidden()
    # The next message is a new run, not a rerun of the run that was being edited.
    view = send(page, "stream fresh")
    expect(view).to_have_attribute("data-status", "completed")
    expect(view.locator(".facts")).not_to_contain_text("rerun of")
    assert second != view.get_attribute("data-run-id")


def test_a_markdown_answer_is_formatted(page: Any, front_url: str) -> None:
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=front_url)
    view, run_id = finished(page, "markdown")
    answer = view.locator(".answer .markdown")
    expect(answer.locator("ol > li")).to_have_count(3)
    expect(answer.locator("ol > li").first).to_contain_text("Run the tests with scripts/test")
    expect(answer.locator("strong").first).to_have_text("tests")
    table = answer.get_by_role("region", name="Table").locator("table")
    expect(table.locator("th")).to_have_text(["step", "owner", "minutes"])
    expect(table.locator("tbody tr")).to_have_count(3)
    expect(table.locator("td.align-right").first).to_have_text("12")
    code = answer.locator(".md-code pre code")
    expect(code).to_contain_text('def release(version: str) -> None:')
    expect(answer.locator(".md-lang")).to_have_text("python")
    link = answer.get_by_role("link", name="the release notes")
    expect(link).to_have_attribute("href", "https://example.com/notes")
    expect(link).to_have_attribute("rel", "noopener noreferrer")
    answer.get_by_role("button", name="Copy code").click()
    expect(answer.get_by_role("button", name="Copied")).to_be_visible()
    assert page.evaluate("navigator.clipboard.readText()").startswith("def release(")
    # The thread's turn formats it too, folded to a few lines with "Show all".
    turn = page.locator(f".run-card[data-run-id='{run_id}']")
    expect(turn.locator(".turn-answer .markdown ol > li")).to_have_count(3)
    expect(turn.locator(".turn-answer .turn-body")).to_have_class("turn-body folded")
    turn.get_by_role("button", name="Show all").click()
    turn = page.locator(f".run-card[data-run-id='{run_id}']")
    expect(turn.locator(".turn-answer .turn-body")).to_have_class("turn-body")
    expect(turn.locator(".turn-answer .md-code")).to_be_in_viewport()
    expect(turn.locator(".show-all")).to_have_attribute("aria-expanded", "true")


def test_markdown_from_an_agent_never_runs_or_loads(page: Any) -> None:
    view, run_id = finished(page, HOSTILE)
    answer = view.locator(".answer")
    expect(answer).to_contain_text('<img src=x onerror="window.__xss=1">')
    expect(answer).to_contain_text("<script>window.__xss=4</script>")
    for where in (answer, page.locator(f".run-card[data-run-id='{run_id}']")):
        expect(where.get_by_role("link", name="web")).to_have_attribute("href", "https://example.com/a")
        # javascript: and data: are no links at all (the parser leaves them as text), and
        # an address that is not http(s) is inert text.
        expect(where).to_contain_text("[click](javascript:window.__xss=2)")
        expect(where.get_by_role("link", name="click")).to_have_count(0)
        expect(where.get_by_role("link", name="data")).to_have_count(0)
        expect(where.locator(".link-inert", has_text="here")).to_have_count(1)
    assert page.locator("img").count() == 0
    assert page.locator("script:not([src])").count() == 0
    assert page.locator("a[href^='javascript:'], a[href^='data:']").count() == 0
    assert page.locator("a:not([href])").count() == 0
    page.locator(".link-inert", has_text="here").first.click()
    assert page.evaluate("window.__xss") is None


def test_a_conflict_leaves_the_draft_and_names_the_active_run(page: Any, front_url: str) -> None:
    view, mine = finished(page, "stream mine")
    # Another client (here: the API outside the page) starts a run in a session of its own.
    api = f"{front_url}{API_PREFIX}"
    elsewhere = page.request.post(f"{api}/sessions", data={"title": "cli session"}).json()["id"]
    active = page.request.post(f"{api}/sessions/{elsewhere}/runs",
                               data={"parts": [{"kind": "text", "text": "slow"}]}).json()["run_id"]
    message = page.get_by_label("Message")
    message.fill("stream not now")
    message.press("Control+Enter")
    notice = page.locator("#notice")
    expect(notice).to_contain_text(f'Another run is active: "slow" ({active}) in session "cli session"')
    expect(notice.get_by_role("link", name="Open that run")).to_have_attribute("href", f"#{active}")
    # Nothing moved: the same run, the same session, the draft in the box.
    expect(view).to_have_attribute("data-run-id", mine)
    expect(page.locator(".session-item[aria-current=true]")).to_contain_text("stream mine")
    expect(message).to_have_value("stream not now")
    notice.get_by_role("button", name="Cancel that run").click()
    expect(notice).to_be_hidden()  # the notice ends with the run it named
    assert page.request.get(f"{api}/runs/{active}").json()["status"] == "cancelled"
    message.press("Control+Enter")
    expect(view).not_to_have_attribute("data-run-id", mine)
    expect(view).to_have_attribute("data-status", "completed")
    run = page.request.get(f"{api}/runs/{view.get_attribute('data-run-id')}").json()
    mine_session = page.request.get(f"{api}/runs/{mine}").json()["session_id"]
    assert run["session_id"] == mine_session  # the draft went where it was written


def test_the_conversation_has_no_serious_violation(scheme_page: Any) -> None:
    page = scheme_page
    finished(page, "markdown")
    finished(page, "ask", "input_required")
    expect(page.locator("#composer-mode")).to_be_visible()
    found = blocking_violations(page)
    assert not found, found
    button(page, "Edit and rerun").click()
    expect(page.locator("#composer-mode")).to_contain_text("Editing a rerun")
    found = blocking_violations(page)
    assert not found, found


def test_what_is_typed_while_a_run_opens_is_kept(page: Any) -> None:
    # The run's first read held back: the view is still opening when the person types on.
    held: list[Any] = []
    pattern = re.compile(r"/runs/run_[0-9a-f]+$")
    # A function of its own: Playwright cannot wrap a bound builtin as a route handler.
    page.route(pattern, lambda route: held.append(route))  # noqa: PLW0108
    message = page.get_by_label("Message", exact=True)
    message.fill("stream the opening words")
    with page.expect_request(pattern):
        message.press("Control+Enter")
    expect(message).to_have_value("")  # sent: the box is empty at once
    message.fill("my next message")
    for route in held:
        route.continue_()
    page.unroute(pattern)
    expect(page.locator("article.run-view")).to_have_attribute("data-status", "completed")
    expect(page.locator(".run-view .answer")).to_contain_text("opening words")
    expect(message).to_have_value("my next message")
