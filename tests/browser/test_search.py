"""The search box at the top of the sessions column: words over all history with the
matched words marked (as text, never HTML), filters, typing with a pause and Escape, the
empty and the no-match states, a hit opening its session and run (in the narrow panels
too), a long result list read a page at a time with a small DOM, and no serious axe-core
violation light and dark."""

from __future__ import annotations

import re
from typing import Any

from llamon_playground.common.contract import API_PREFIX
from llamon_playground.harness.browser import copies
from tests.browser.accessibility import blocking_violations
from tests.browser.helpers import button, expect, finished, send

MAX_HITS = 40  # the rows in view and eight either side, whatever the result's size

SCROLL_TO_END = r"""
async (timeoutMs) => {
  const list = document.getElementById('search-results');
  const end = performance.now() + timeoutMs;
  let maxHits = 0;
  const atEnd = () => list.dataset.complete === 'true'
    && list.scrollTop + list.clientHeight >= list.scrollHeight - 1;
  while (!atEnd() && performance.now() < end) {
    list.scrollTop += list.clientHeight * 3;  // three screens a frame: a quick reader
    await new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)));
    maxHits = Math.max(maxHits, list.querySelectorAll('.hit').length);
  }
  return { loaded: Number(list.dataset.loaded), complete: atEnd(), maxHits };
}
"""


def search_box(page: Any) -> Any:
    return page.get_by_role("searchbox", name="Search runs")


def test_words_find_runs_in_every_session_marked_and_a_hit_opens_its_run(page: Any) -> None:
    expect(page.locator("#connection")).to_have_attribute("data-state", "live")
    state = page.locator("#search-state")
    expect(state).to_contain_text("Type words to find a run")  # the empty state says what to do
    _, first = finished(page, "stream the Quokka smiles")
    expect(page.locator(f"#run-list .run-card[data-run-id='{first}']")).to_be_visible()
    button(page, "New session").click()
    _, second = finished(page, 'stream a quokka <img src=x onerror="window.__xss=1"> jumps')
    finished(page, "stream nothing to see here")

    search_box(page).fill("quokka")  # typing searches after a pause: no Enter
    hits = page.locator("#search-results .hit")
    expect(hits).to_have_count(2)
    assert [hits.nth(i).get_attribute("data-run-id") for i in range(2)] == [second, first]
    expect(state).to_have_text("2 runs match, newest first.")
    marks = page.locator("#search-results mark")
    assert sorted(m.lower() for m in marks.all_inner_texts()) == ["quokka", "quokka"], \
        marks.all_inner_texts()
    expect(hits.nth(0).locator(".hit-run")).to_contain_text('<img src=x onerror="window.__xss=1">')
    assert page.locator("#search-results img").count() == 0
    assert page.evaluate("window.__xss") is None
    expect(page.locator("#session-list")).to_be_hidden()  # the hits take the column

    # A hit in the other session opens that session's thread and the run.
    hits.nth(1).click()
    expect(page.locator("article.run-view")).to_have_attribute("data-run-id", first)
    expect(page.locator(f"#run-list .run-card[data-run-id='{first}']")).to_be_visible()
    expect(hits.nth(1)).to_have_attribute("aria-current", "true")

    # Words that no run holds: the no-match state; Enter searches at once.
    search_box(page).fill("quokka zebrafish")
    search_box(page).press("Enter")
    expect(state).to_contain_text("No runs match")
    expect(hits).to_have_count(0)
    # Escape clears: the sessions come back with the empty state.
    search_box(page).press("Escape")
    expect(search_box(page)).to_have_value("")
    expect(state).to_contain_text("Type words to find a run")
    expect(page.locator("#session-list")).to_be_visible()
    expect(page.locator("#search-results")).to_be_hidden()


def test_filters_status_label_and_a_failed_evaluator(page: Any) -> None:
    _, refused = finished(page, "refuse the walrus request", "failed")
    _, labelled = finished(page, "stream walrus says hello")
    page.get_by_label("Run label").fill("walrus pick")
    page.get_by_label("Run label").press("Enter")
    expect(page.locator(f".run-card[data-run-id='{labelled}'] .label")).to_have_text("walrus pick")
    _, unhappy = finished(page, "stream walrus only")  # no "hello": mentions_hello fails
    hits = page.locator("#search-results .hit")
    search_box(page).fill("walrus")
    expect(hits).to_have_count(3)

    filters = page.locator("#search-filters")
    filters.locator("summary").click()
    checks = (("failed", refused), ("has a label", labelled), ("an evaluator failed", unhappy))
    for name, run_id in checks:
        box = filters.get_by_role("checkbox", name=name, exact=True)
        box.check()
        expect(hits).to_have_count(1)
        expect(hits.first).to_have_attribute("data-run-id", run_id)
        expect(filters.locator("summary")).to_have_text("Filters (1)")
        box.uncheck()
        expect(hits).to_have_count(3)
    # Filters alone (no words) search too; Escape in the box clears words and filters.
    search_box(page).fill("")
    filters.get_by_role("checkbox", name="an evaluator failed").check()
    expect(page.locator(f"#search-results .hit[data-run-id='{unhappy}']")).to_be_visible()
    expect(page.locator(f"#search-results .hit[data-run-id='{labelled}']")).to_have_count(0)
    search_box(page).press("Escape")
    expect(filters.get_by_role("checkbox", name="an evaluator failed")).not_to_be_checked()
    expect(page.locator("#search-results")).to_be_hidden()


def test_hits_name_their_runs_whatever_matched(page: Any) -> None:
    # Three runs in one session titled after the first: "ocelot" is in the title of all
    # three and in the input of the first only.
    _, first = finished(page, "stream ocelot prowls")
    _, second = finished(page, "stream the second try")
    _, third = finished(page, "refuse the third", "failed")
    search_box(page).fill("ocelot")
    hits = page.locator("#search-results .hit")
    expect(hits).to_have_count(3)
    by_id = {run_id: page.locator(f"#search-results .hit[data-run-id='{run_id}']")
             for run_id in (first, second, third)}
    # Each hit says which run it is: its input, its status; the title only as the reason.
    expect(by_id[second].locator(".hit-run")).to_have_text("you: stream the second try")
    expect(by_id[second].locator(".hit-why")).to_have_text("matched session: stream ocelot prowls")
    expect(by_id[second].locator(".hit-why mark")).to_have_text("ocelot")
    expect(by_id[second].locator(".status")).to_have_text("completed")
    expect(by_id[third].locator(".hit-run")).to_have_text("you: refuse the third")
    expect(by_id[third].locator(".status")).to_have_text("failed")
    expect(by_id[third].locator(".when")).to_have_text(re.compile(r"^\d\d:\d\d$"))
    # The run whose input matched shows its input marked, and no second reason.
    expect(by_id[first].locator(".hit-run mark")).to_have_text("ocelot")
    expect(by_id[first].locator(".hit-why")).to_have_count(0)
    # Found by a filter alone: still named by its input, never by its id alone.
    search_box(page).fill("")
    filters = page.locator("#search-filters")
    filters.locator("summary").click()
    filters.get_by_role("checkbox", name="failed", exact=True).check()
    expect(by_id[third].locator(".hit-run")).to_have_text("you: refuse the third")
    search_box(page).press("Escape")


def test_the_hits_follow_history_while_the_reader_is_at_the_top(
        page: Any, front_url: str) -> None:
    finished(page, "stream a kiwi ripens")
    search_box(page).fill("kiwi")
    hits = page.locator("#search-results .hit")
    expect(hits).to_have_count(1)
    # A run started by another client, in another session: it comes in on top.
    api = f"{front_url}{API_PREFIX}"
    session = page.request.post(f"{api}/sessions", data={"title": "elsewhere"}).json()["id"]
    started = page.request.post(f"{api}/sessions/{session}/runs",
                                data={"parts": [{"kind": "text", "text": "stream one more kiwi"}]})
    assert started.status == 202, started.text()
    expect(hits).to_have_count(2)
    expect(hits.first).to_have_attribute("data-run-id", started.json()["run_id"])
    expect(hits.first.locator(".hit-session")).to_have_text("in elsewhere")


def test_a_thousand_hits_are_read_a_page_at_a_time_with_a_small_dom(
        page: Any, front_url: str) -> None:
    view = send(page, "stream a narwhal template")
    expect(view).to_have_attribute("data-status", "completed")
    api = f"{front_url}{API_PREFIX}"
    bundle = page.request.post(f"{api}/bundles/export",
                               data={"run_ids": [view.get_attribute("data-run-id")]}).json()
    answer = page.request.post(f"{api}/bundles/import", data={"bundle": copies(bundle, 1000)})
    assert answer.status == 201, answer.text()
    reads: list[str] = []
    page.on("request", lambda r: reads.append(r.url) if "/search?" in r.url else None)
    search_box(page).fill("narwhal")
    search_box(page).press("Enter")
    results = page.locator("#search-results")
    expect(results).to_have_attribute("data-loaded", "50")
    assert page.locator(".hit").count() < MAX_HITS
    scrolled = page.evaluate(SCROLL_TO_END, 60_000)
    assert scrolled == {"loaded": 1001, "complete": True, "maxHits": scrolled["maxHits"]}, scrolled
    assert scrolled["maxHits"] < MAX_HITS, scrolled
    # The oldest (the template itself) is last; each further page read once.
    expect(page.locator(".hit").last).to_have_attribute("data-run-id", view.get_attribute("data-run-id"))
    afters = [m.group(1) for m in (re.search(r"after=(\d+)", url) for url in reads) if m]
    assert len(afters) == 20 and len(set(afters)) == 20, reads


def test_in_the_narrow_panels_a_hit_opens_the_run_panel(page: Any) -> None:
    _, run_id = finished(page, "stream an ocelot naps")
    page.set_viewport_size({"width": 800, "height": 700})
    button(page, "Sessions").click()
    search_box(page).fill("ocelot")
    hit = page.locator(f"#search-results .hit[data-run-id='{run_id}']")
    expect(hit).to_be_visible()
    expect(hit.locator("mark")).to_have_text("ocelot")
    # Nothing in the sessions panel is cut.
    assert page.evaluate("""() => { const p = document.querySelector('.sessions');
        return p.scrollWidth <= p.clientWidth; }""")
    button(page, "Thread").click()
    button(page, "Sessions").click()
    hit.click()
    expect(page.get_by_role("region", name="Run view")).to_be_visible()
    expect(page.locator("article.run-view")).to_have_attribute("data-run-id", run_id)
    expect(page.get_by_role("navigation", name="Sessions")).to_be_hidden()


def test_the_search_views_have_no_serious_violation(scheme_page: Any) -> None:
    page = scheme_page
    finished(page, "stream the heron waits")
    search_box(page).fill("heron")
    expect(page.locator("#search-results mark").first).to_be_visible()
    page.locator("#search-filters summary").click()
    found = blocking_violations(page)
    assert not found, f"hits: {found}"
    search_box(page).fill("heron zebrafish")
    expect(page.locator("#search-state")).to_contain_text("No runs match")
    found = blocking_violations(page)
    assert not found, f"no match: {found}"
    page.set_viewport_size({"width": 800, "height": 700})
    button(page, "Sessions").click()
    search_box(page).fill("heron")
    expect(page.locator("#search-results mark").first).to_be_visible()
    found = blocking_violations(page)
    assert not found, f"narrow: {found}"
