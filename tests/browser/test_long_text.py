"""A long answer in a real Chromium: the run view shows its excerpt and a "Show all" link
that opens the whole text, streamed by the daemon from the blob store."""

from __future__ import annotations

from typing import Any

from tests.browser.helpers import expect, send

# Seven words of 10,000 letters each: 70,006 bytes of answer, over the 64 KiB a text keeps
# inline, in seven deltas (the echo Host streams a word at a time).
WORDS = [chr(ord("a") + n) * 10_000 for n in range(7)]
ANSWER = " ".join(WORDS)


def test_a_long_answer_shows_an_excerpt_and_a_link_to_all_of_it(page: Any) -> None:
    view = send(page, "stream " + ANSWER)
    expect(view).to_have_attribute("data-status", "completed")
    answer = view.locator(".answer")
    expect(answer).to_have_attribute("data-source", "final")
    link = answer.get_by_role("link", name="Show all 70 KB")
    expect(link).to_be_visible()
    shown = answer.locator(".part.text").first.inner_text()
    assert shown.startswith(WORDS[0]) and WORDS[-1] not in shown, "an excerpt"
    with page.context.expect_page() as opened:
        link.click()
    whole = opened.value
    whole.wait_for_load_state()
    assert whole.locator("body").inner_text().strip() == ANSWER
    whole.close()
