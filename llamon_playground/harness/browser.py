"""The browser the page's bench section, browser tests and screenshots drive, and what they
install in it before the page's own scripts run (Playwright's init scripts are not subject
to the page's CSP).

`LONG_TASKS`: a `PerformanceObserver` for `longtask` entries (main-thread tasks over 50 ms)
collecting into `window.__probe.longtasks`. `STREAM_WATCH`: counts what a run's stream
delivers and what the page writes for it: every `output.delta` a run's `EventSource`
receives, the run streams by `WeakRef` (so the probe itself keeps none alive), the batches
of DOM mutations under an `.answer` and the text they wrote, and the animation frames. The
bench installs only `LONG_TASKS`: the mutation observer's own work would be measured with
the page's.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

# Debian's chromium (never a Playwright download), as the browser tests and the bench use it.
CHROMIUM = Path(os.environ.get("LLAMON_PLAYGROUND_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


def missing_browser() -> str | None:
    """Why the page cannot be driven here (Playwright or the browser missing), or None."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed"
    if not CHROMIUM.is_file():
        return f"{CHROMIUM} is missing"
    return None

LONG_TASKS = r"""
(() => {
  const probe = window.__probe || (window.__probe = {});
  probe.longtasks = [];
  probe.observing = false;
  try {
    new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) {
        probe.longtasks.push({ start: entry.startTime, duration: entry.duration });
      }
    }).observe({ type: 'longtask', buffered: true });
    probe.observing = true;
  } catch (error) {
    probe.observeError = String(error);
  }
})();
"""

STREAM_WATCH = r"""
(() => {
  const probe = window.__probe || (window.__probe = {});
  // batches: mutation batches under an .answer; perFrame: how many fell in each frame;
  // written: characters of text those mutations put in (an added node's whole text, a
  // changed text node's whole data), which is how much text the page wrote.
  probe.reset = () => Object.assign(probe, { batches: 0, frames: 0, perFrame: {}, written: 0 });
  Object.assign(probe, { deltas: 0, streams: [] });
  probe.reset();
  const Native = window.EventSource;
  window.EventSource = class extends Native {
    constructor(url, init) {
      super(url, init);
      if (/\/runs\/[^/]+\/events/.test(String(url))) {
        probe.streams.push(new WeakRef(this));
        this.addEventListener('output.delta', () => { probe.deltas += 1; });
      }
    }
  };
  const inAnswer = (node) => {
    const element = node.nodeType === Node.ELEMENT_NODE ? node : node.parentElement;
    return Boolean(element && element.closest('.answer'));
  };
  new MutationObserver((records) => {
    const ours = records.filter((record) => inAnswer(record.target));
    if (!ours.length) return;
    for (const record of ours) {
      if (record.type === 'characterData') probe.written += record.target.data.length;
      for (const node of record.addedNodes) probe.written += node.textContent.length;
    }
    probe.batches += 1;
    probe.perFrame[probe.frames] = (probe.perFrame[probe.frames] || 0) + 1;
  }).observe(document, { subtree: true, childList: true, characterData: true });
  const frame = () => {
    probe.frames += 1;
    requestAnimationFrame(frame);
  };
  requestAnimationFrame(frame);
  // Run streams still reachable, and of those, still open (after a forced GC).
  probe.liveStreams = () => probe.streams.map((ref) => ref.deref()).filter(Boolean);
  probe.openStreams = () => probe.liveStreams().filter((s) => s.readyState !== 2).length;
  probe.mostInOneFrame = () => Math.max(0, ...Object.values(probe.perFrame));
})();
"""

# Scroll the thread a screen a frame, as a reader flicking up into the past would, until every
# page is read and the oldest turn is in view (or `timeoutMs` passed): {steps, loaded,
# complete, maxCards}. The argument is `timeoutMs`, or `{timeoutMs, screens}` to flick
# `screens` screens a frame (a faster reader; the browser tests' long lists).
SCROLL_TO_OLDEST = r"""
async (options) => {
  const { timeoutMs, screens = 1 } = typeof options === 'number' ? { timeoutMs: options } : options;
  const list = document.getElementById('run-list');
  const end = performance.now() + timeoutMs;
  let steps = 0;
  let maxCards = 0;
  const atTop = () => list.dataset.complete === 'true' && list.scrollTop <= 0;
  while (!atTop() && performance.now() < end) {
    list.scrollTop -= list.clientHeight * screens;
    steps += 1;
    await new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)));
    maxCards = Math.max(maxCards, list.querySelectorAll('.run-card').length);
  }
  return { steps, loaded: Number(list.dataset.loaded), complete: atTop(), maxCards };
}
"""


def copies(bundle: dict[str, Any], count: int) -> dict[str, Any]:
    """An exported one-run bundle made into `count` copies of the run (ids of their own,
    labelled `copy 0`... oldest first, no events): a long session to import."""
    template = bundle["runs"][0]
    return {**bundle, "events": [], "runs": [
        {**template, "id": f"run_{n:032x}", "label": f"copy {n}"} for n in range(count)]}


def longest(probe: dict[str, Any], since: float = 0.0) -> tuple[float, int]:
    """(the longest task's ms, how many) among the long tasks that started after `since`."""
    tasks = [t["duration"] for t in probe.get("longtasks", []) if t["start"] >= since]
    return (max(tasks) if tasks else 0.0), len(tasks)
