"""page: the Playground page in the system Chromium (Playwright, headless), served by a live
front on loopback with the echo Host behind it.

  page.first_paint          first-contentful-paint of `/` (median of the loads; the first,
                            cold one in the notes)  vs  the same for the front's 401 page (no
                            script, no API call: the floor of a page from this front)
  page.stream_longest_task  the longest main-thread task (a `longtask` PerformanceObserver)
                            from Send to the final parts of a 10,000-delta run; 0 when none
                            was over 50 ms (the count is in the notes)
  page.stream_heap_growth   JS heap after that run minus before it, each after a forced GC
                            (CDP HeapProfiler.collectGarbage)  vs  the final text's size
  page.scroll_longest_task  the longest task while a 1,000-run session is scrolled a screen a
                            frame to its end (the first pass reads every page on the way)

The stream figures are medians over the runs (`--quick` 1, else 3), the scroll figure over
the passes (2, else 3): on a busy machine a frame the scheduler held back is the machine's.

Skipped, with a note, without Playwright or the browser (`sudo apt-get install chromium`).
"""

from __future__ import annotations

import statistics
from typing import Any

from llamon_playground.common.contract import API_PREFIX
from llamon_playground.harness.browser import (
    CHROMIUM,
    CHROMIUM_ARGS,
    LONG_TASKS,
    SCROLL_TO_OLDEST,
    copies,
    longest,
    missing_browser,
)
from scripts.benchmarks.clients.live_run import open_live
from scripts.benchmarks.figures import Figure, Target, log
from scripts.benchmarks.owned import Owned

DELTAS = 10_000
RUNS = 1_000
TIMEOUT_MS = 120_000
# What stays after a run is its final text a few times over (the view's detail, the list's
# entry): 35-180 KB for 58 KB of text. Keeping the 10,000 deltas costs +1.9 MB (measured with
# a probe that keeps each parsed delta), so half a megabyte tells the two apart.
HEAP_BOUND_KB = 512.0
# A paint entry, from the buffer or when it comes.
FCP = """() => new Promise((resolve) => {
  const done = (entries) => {
    const fcp = entries.find((e) => e.name === 'first-contentful-paint');
    if (fcp) resolve(fcp.startTime);
  };
  new PerformanceObserver((list) => done(list.getEntries()))
    .observe({ type: 'paint', buffered: true });
})"""


async def first_paints(context: Any, url: str, loads: int) -> list[float]:
    page = await context.new_page()
    try:
        samples = []
        for _ in range(loads):
            await page.goto(url)
            samples.append(float(await page.evaluate(FCP)))
        return samples
    finally:
        await page.close()


async def heap_used(cdp: Any) -> int:
    await cdp.send("HeapProfiler.collectGarbage")
    return int((await cdp.send("Runtime.getHeapUsage"))["usedSize"])


async def send_and_wait(page: Any, text: str) -> str:
    """Send `text` from the composer; wait for its run's final parts: the run id."""
    views = page.locator("article.run-view")
    before = await views.get_attribute("data-run-id") if await views.count() else None
    await page.get_by_label("Message").fill(text)
    await page.get_by_label("Message").press("Control+Enter")
    await page.wait_for_function(
        "(before) => { const v = document.querySelector('article.run-view');"
        " return v && v.dataset.runId !== before && v.dataset.status === 'completed'"
        " && v.querySelector('.answer').dataset.source === 'final'; }",
        arg=before, timeout=TIMEOUT_MS)
    run_id = await views.get_attribute("data-run-id")
    # The list took the ended run in too: nothing of the run is still being written.
    await page.locator(f".run-card[data-run-id='{run_id}'][data-status='completed']"
                       ).wait_for(timeout=TIMEOUT_MS)
    return str(run_id)


async def stream(page: Any, cdp: Any, reps: int) -> list[dict[str, Any]]:
    """`reps` runs of DELTAS deltas, each: its longest task, the heap before and after."""
    await send_and_wait(page, "tokens 100")  # warm-up: the Host started, the code paths run
    samples = []
    for rep in range(reps):
        before = await heap_used(cdp)
        t0 = await page.evaluate("() => performance.now()")
        await send_and_wait(page, f"tokens {DELTAS}")
        worst, count = longest(await page.evaluate("() => __probe"), t0)
        after = await heap_used(cdp)
        chars = await page.locator("article.run-view .answer").evaluate(
            "a => a.textContent.length")
        samples.append({"longest_ms": worst, "long_tasks": count,
                        "heap_growth_kb": round((after - before) / 1024, 1),
                        "final_chars": chars})
        log(f"page: {DELTAS} deltas, rep {rep + 1}: longest task {worst:.0f} ms ({count} over "
            f"50 ms), heap {(after - before) / 1024:+.0f} KB")
    return samples


async def import_session(page: Any, api: str, template_run: str) -> str:
    bundle = await (await page.request.post(f"{api}/bundles/export",
                                            data={"run_ids": [template_run]})).json()
    answer = await page.request.post(f"{api}/bundles/import",
                                     data={"bundle": copies(bundle, RUNS)})
    if answer.status != 201:
        raise RuntimeError(f"import answered {answer.status}: {await answer.text()}")
    return str(next(iter((await answer.json())["sessions"].values())))


async def scroll(page: Any, api: str, passes: int) -> list[dict[str, Any]]:
    """Scroll a RUNS-run session from its end (the newest turn) up to its oldest turn `passes`
    times (the first reads its pages)."""
    run_id = await page.locator("article.run-view").get_attribute("data-run-id")
    session = await import_session(page, api, str(run_id))
    await page.reload()
    await page.locator(f".session-item[data-session-id='{session}']").click()
    await page.locator("#run-list[data-loaded='100']").wait_for(state="attached")
    samples = []
    for n in range(passes):
        await page.locator("#run-list").evaluate("list => { list.scrollTop = list.scrollHeight; }")
        t0 = await page.evaluate("() => performance.now()")
        done = await page.evaluate(SCROLL_TO_OLDEST, TIMEOUT_MS)
        if not done["complete"] or done["loaded"] != RUNS:
            raise RuntimeError(f"the thread did not scroll to its oldest turn: {done}")
        worst, count = longest(await page.evaluate("() => __probe"), t0)
        samples.append({"longest_ms": worst, "long_tasks": count, **done})
        log(f"page: scrolling {RUNS} runs, pass {n + 1}: longest task {worst:.0f} ms ({count} "
            f"over 50 ms, {done['steps']} screens, at most {done['maxCards']} cards)")
    return samples


async def bench_page(quick: bool, owned: Owned) -> list[Figure]:
    why = missing_browser()
    if why:
        why = f"{why} (`sudo apt-get install chromium`, `scripts/setup`)"
        log(f"page: skipped: {why}")
        return [Figure("page.first_paint", None, "ms", None, "skipped", None, {"skipped": why})]
    from playwright.async_api import async_playwright

    live = await open_live(owned, "lppg", 0)
    try:
        if live.via != "front":
            raise RuntimeError(f"the page needs the front: {live.via}")
        url = f"http://{live.target.host_header}"
        api = f"{url}{API_PREFIX}"
        loads, reps, passes = (3, 1, 2) if quick else (7, 3, 3)
        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(executable_path=str(CHROMIUM),
                                                       args=CHROMIUM_ARGS)
            try:
                floor_context = await browser.new_context()  # no cookie: the 401 page
                floor = await first_paints(floor_context, f"{url}/", loads)
                await floor_context.close()
                context = await browser.new_context(viewport={"width": 1280, "height": 720})
                await context.add_init_script(LONG_TASKS)
                login = await context.new_page()
                await login.goto(f"{url}/?token={live.stack.token}")  # sets the cookie
                await login.close()
                paints = await first_paints(context, f"{url}/", loads)
                page = await context.new_page()
                await page.goto(f"{url}/")
                cdp = await context.new_cdp_session(page)
                streamed = await stream(page, cdp, reps)
                scrolled = await scroll(page, api, passes)
            finally:
                await browser.close()
    finally:
        await live.close(owned)
    log(f"page: first paint {statistics.median(paints):.0f} ms (401 page "
        f"{statistics.median(floor):.0f} ms)")

    def median(samples: list[dict[str, Any]], key: str) -> float:
        return float(statistics.median(s[key] for s in samples))

    # Medians over the reps: on a busy machine one descheduled frame is the machine's.
    return [
        Figure("page.first_paint", statistics.median(paints), "ms", statistics.median(floor),
               "the front's 401 page (no script)", Target("value", "<=", 300.0),
               {"samples_ms": paints, "floor_ms": floor}),
        Figure("page.stream_longest_task", median(streamed, "longest_ms"), "ms", None, "",
               Target("value", "<=", 50.0), {"deltas": DELTAS, "reps": streamed}),
        Figure("page.stream_heap_growth", median(streamed, "heap_growth_kb"), "KB",
               median(streamed, "final_chars") / 1024, "the final text's size",
               Target("value", "<=", HEAP_BOUND_KB)),
        Figure("page.scroll_longest_task", median(scrolled, "longest_ms"), "ms", None, "",
               Target("value", "<=", 50.0), {"runs": RUNS, "passes": scrolled}),
    ]
