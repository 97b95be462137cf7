"""What keeps the page fast, checked for its structure (speed itself is measured in
`scripts/bench --only page`, never timed here): a long session is read a page at a time as
it scrolls, with a small DOM; a 10,000-delta stream is written once an animation frame, its
final parts replace it once, and nothing holds the stream afterwards."""

from __future__ import annotations

import re
from typing import Any

from llamon_playground.common.contract import API_PREFIX
from llamon_playground.harness.browser import LONG_TASKS, SCROLL_TO_OLDEST, STREAM_WATCH, copies
from tests.browser.helpers import expect, send
from tests.support.waiting import wait_for

DELTAS = 10_000
MAX_CARDS = 60  # the rows in view and ten either side, whatever the session's size
# Through the thread six screens a frame, up and back down: a reader in a hurry. A page of
# 100 runs is ~50 screens, so each page is still crossed over several frames; a screen a
# frame reads the same pages in six times the frames (each step waits two animation frames,
# ~33 ms: a pass over a thousand runs took ~5.5 s at three screens a frame).
SCREENS = 6
FLICK_UP = {"timeoutMs": 60_000, "screens": SCREENS}


def import_copies(page: Any, front_url: str, count: int) -> str:
    """A session of `count` runs (copies of one real run, labelled `copy 0`... oldest
    first), imported as a bundle: its id."""
    view = send(page, "stream a template")
    expect(view).to_have_attribute("data-status", "completed")
    api = f"{front_url}{API_PREFIX}"
    bundle = page.request.post(f"{api}/bundles/export",
                               data={"run_ids": [view.get_attribute("data-run-id")]}).json()
    answer = page.request.post(f"{api}/bundles/import", data={"bundle": copies(bundle, count)})
    assert answer.status == 201, answer.text()
    return str(next(iter(answer.json()["sessions"].values())))


def test_a_thousand_runs_are_read_a_page_at_a_time_as_the_list_scrolls(
        page: Any, front_url: str) -> None:
    session = import_copies(page, front_url, 1000)
    reads: list[str] = []
    page.on("request", lambda r: reads.append(r.url) if f"/sessions/{session}/runs" in r.url
            else None)
    page.reload()
    page.locator(f".session-item[data-session-id='{session}']").click()
    run_list = page.locator("#run-list")
    cards = page.locator(".run-card")
    # A conversation: oldest on top, the newest at the bottom by the composer, in view.
    expect(cards.last.locator(".label")).to_have_text("copy 999")
    expect(run_list).to_have_attribute("data-loaded", "100")
    expect(cards.last).to_be_in_viewport(ratio=0.9)
    labels = cards.locator(".label").all_inner_texts()
    assert [int(x.split()[1]) for x in labels] == sorted(int(x.split()[1]) for x in labels)
    # The first page: read when the session opens, and at most once more when the page's
    # event stream first goes live (it reads the lists again then, closing the gap between
    # the page's first reads and the stream's start).
    assert 1 <= len(reads) <= 2, reads
    assert all("order=newest" in url and "after=" not in url for url in reads), reads
    assert cards.count() < MAX_CARDS, cards.count()

    scrolled = page.evaluate(SCROLL_TO_OLDEST, FLICK_UP)
    assert scrolled["complete"] and scrolled["loaded"] == 1000, scrolled
    assert scrolled["maxCards"] < MAX_CARDS, scrolled
    expect(cards.first.locator(".label")).to_have_text("copy 0")
    cursors = [re.search(r"after=(\d+)", url) for url in reads]
    afters = [m.group(1) for m in cursors if m]
    assert len(afters) == 9 and len(set(afters)) == 9, reads  # each further page read once

    # Back down as fast: the cards keep their order in the DOM (as a screen reader
    # and Tab go) while rows come in below them.
    order = page.evaluate("""async (screens) => {
        const list = document.getElementById('run-list');
        const orders = [];
        while (list.scrollTop + list.clientHeight < list.scrollHeight - 1) {
          list.scrollTop += list.clientHeight * screens;
          await new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)));
          const at = [...list.querySelectorAll('.run-item')].map((li) => Number(li.ariaPosInSet));
          orders.push(at.every((n, i) => i === 0 || n === at[i - 1] + 1));
        }
        return orders;
      }""", SCREENS)
    assert order and all(order), order
    expect(cards.last.locator(".label")).to_have_text("copy 999")
    # Back up to the first turn at once: every page is read by now, and the way up was
    # walked above (the state is the same: the oldest turn in view, nothing left to read).
    run_list.evaluate("list => { list.scrollTop = 0; }")
    oldest = page.locator(".run-card", has=page.locator(".label", has_text=re.compile(r"^copy 0$")))
    expect(oldest).to_be_in_viewport(ratio=0.9)

    # A run started elsewhere while the reader is up in the past comes in at the end (by
    # /events) without moving the turns they read; a change to a run far up reaches it too.
    started = page.request.post(f"{front_url}{API_PREFIX}/sessions/{session}/runs",
                                data={"parts": [{"kind": "text", "text": "stream late"}]})
    assert started.status == 202, started.text()
    expect(run_list).to_have_attribute("data-loaded", "1001")
    assert run_list.evaluate("list => list.scrollTop") == 0
    expect(oldest).to_be_in_viewport(ratio=0.9)
    # A run far below the first page, labelled elsewhere, is read again on its own.
    oldest_id = oldest.get_attribute("data-run-id")
    labelled = page.request.patch(f"{front_url}{API_PREFIX}/runs/{oldest_id}",
                                  data={"label": "the oldest"})
    assert labelled.ok, labelled.text()
    expect(page.locator(f".run-card[data-run-id='{oldest_id}'] .label")).to_have_text("the oldest")
    run_list.evaluate("list => { list.scrollTop = list.scrollHeight; }")
    expect(cards.last).to_have_attribute("data-run-id", started.json()["run_id"])
    assert cards.count() < MAX_CARDS, cards.count()


def test_a_long_stream_is_painted_per_frame_and_let_go_once_final(page: Any) -> None:
    page.add_init_script(LONG_TASKS)
    page.add_init_script(STREAM_WATCH)
    page.reload()
    expect(page.locator("#host-state")).to_contain_text("Host:")  # the page's scripts ran
    page.evaluate("() => __probe.reset()")
    view = send(page, f"tokens {DELTAS}")
    expect(view).to_have_attribute("data-status", "completed", timeout=120_000)
    answer = view.locator(".answer")
    expect(answer).to_have_attribute("data-source", "final")
    # The list read the ended run again (as the view did): every write is in.
    card = page.locator(f".run-card[data-run-id='{view.get_attribute('data-run-id')}']")
    expect(card).to_have_attribute("data-status", "completed")
    probe = page.evaluate("""() => ({ deltas: __probe.deltas, batches: __probe.batches,
        frames: __probe.frames, perFrame: __probe.mostInOneFrame(), written: __probe.written,
        open: __probe.openStreams(), observing: __probe.observing })""")

    assert probe["deltas"] == DELTAS, probe  # every delta arrived, once
    # The final text, once: one stored text part, not the streamed chunks beside it.
    text = answer.evaluate("a => a.textContent")
    # (Its Markdown paragraph drops the last token's trailing space.)
    sent = "".join(f"t{n} " for n in range(DELTAS))
    assert text == sent.rstrip(), text[:200]
    # Each character was written at most twice: streamed once, in the final parts once (a
    # page rewriting the whole text each frame, or the final parts twice, writes far more).
    assert probe["written"] <= 2 * len(sent), (probe, len(text))
    shape = answer.evaluate("""a => {
        const walker = document.createTreeWalker(a, NodeFilter.SHOW_TEXT);
        let textNodes = 0;
        while (walker.nextNode()) textNodes += 1;
        return { children: [...a.children].map((c) => c.className),
                 chunks: a.querySelectorAll('.chunk').length, textNodes };
      }""")
    # One text part, formatted: one paragraph holding one text node.
    assert shape == {"children": ["part text markdown"], "chunks": 0, "textNodes": 1}, shape
    # DOM writes follow animation frames, not deltas: at most one paint a frame, plus the
    # final replacement (a page writing per delta puts dozens in a frame when one network
    # read brings dozens of deltas).
    assert probe["batches"] <= probe["frames"] + 2, probe
    assert probe["perFrame"] <= 2, probe
    # The page closed the run's stream, and after a GC nothing holds it.
    assert probe["open"] == 0, probe
    cdp = page.context.new_cdp_session(page)

    def streams_collected() -> bool:
        cdp.send("HeapProfiler.collectGarbage")
        return page.evaluate("() => __probe.liveStreams().length") == 0

    wait_for(streams_collected, timeout=20, what="the run's EventSource to be collected")
    # The long-task observer is in place and reports: a 60 ms task of our own shows up.
    assert probe["observing"], probe
    page.evaluate("""() => setTimeout(() => {
        const end = performance.now() + 60; while (performance.now() < end) {} }, 0)""")
    wait_for(lambda: page.evaluate("() => __probe.longtasks.some((t) => t.duration >= 60)"),
             timeout=20, what="the long-task observer to report our own long task")
