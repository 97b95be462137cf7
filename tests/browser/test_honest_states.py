"""The page says what is true when things go wrong: a lost daemon shows as lost (the Host
and the run as unknown, not as their last value) and the page reconnects by itself; a
notice ends with its owner; a failed run shows its own Host log lines; an interrupted run's
steps never read completed after its end; Cancel stays in reach while the answer grows."""

from __future__ import annotations

import re
import signal
from typing import Any

from tests.browser.helpers import button, expect, finished, slow_run_streaming
from tests.support.procs import Stack

# The connection indicator's promise is "lost within 2 s" of a daemon dying.
LOST_WITHIN_MS = 2_000


def test_a_dead_daemon_shows_lost_then_live_and_its_notice_ends(
        page: Any, page_stack: tuple[Stack, str]) -> None:
    stack, _ = page_stack
    connection = page.locator("#connection")
    expect(connection).to_have_attribute("data-state", "live")
    view, _ = slow_run_streaming(page, 2)
    expect(page.locator("#host-state")).to_have_attribute("data-state", "ready")
    assert stack.daemon is not None
    stack.remember_hosts()  # the Host it leaves behind is stopped by the next daemon
    stack.daemon.signal(signal.SIGKILL)
    stack.daemon.wait(10)
    expect(connection).to_have_attribute("data-state", "lost", timeout=LOST_WITHIN_MS)
    expect(connection).to_contain_text(re.compile(r"lost.*attempt \d+"))
    badge = page.locator("#host-state")
    expect(badge).to_have_attribute("data-state", "unknown")
    expect(badge).not_to_contain_text("ready")
    expect(view.locator(".facts .status")).to_have_text("unknown (connection lost)")
    turn = page.locator(f".run-card[data-run-id='{view.get_attribute('data-run-id')}'] .status")
    expect(turn).to_have_text("unknown (connection lost)")  # the thread says so too
    # An action meanwhile gets a 503: its notice belongs to the daemon's absence.
    button(page, "New session").click()
    notice = page.locator("#notice")
    expect(notice).to_have_attribute("data-owner", "daemon")
    expect(notice).to_contain_text("reconnects by itself")
    stack.start_daemon()
    expect(connection).to_have_attribute("data-state", "live")
    expect(notice).to_be_hidden()
    expect(badge).not_to_have_attribute("data-state", "unknown")
    # The run the dead daemon left is ended by the next one; its steps say so.
    expect(view).to_have_attribute("data-status", "interrupted")
    expect(view.locator(".facts .status")).to_have_text("interrupted")
    steps = view.get_by_role("list", name="Phases")
    expect(steps.locator("li[data-phase='complete']")).to_have_attribute("data-state", "interrupted")
    expect(steps.locator("li[data-phase='send']")).to_have_attribute("data-state", "interrupted")
    expect(steps.locator("li[data-phase='send']")).to_have_text("send: interrupted (daemon_restarted)")
    expect(view.get_by_role("region", name="Diagnostics")).to_contain_text(
        "interrupted: daemon_restarted")
    expect(turn).to_have_text("interrupted")


def test_a_conflict_notice_ends_when_the_active_run_ends(page: Any) -> None:
    view, _ = slow_run_streaming(page, 1)
    active = view.get_attribute("data-run-id") or ""
    page.get_by_label("Message").fill("stream again")
    page.get_by_label("Message").press("Control+Enter")
    notice = page.locator("#notice")
    expect(notice).to_have_attribute("data-owner", f"run:{active}")
    expect(notice).to_contain_text(active)
    button(page, "Cancel").click()
    expect(view).to_have_attribute("data-status", "cancelled")
    expect(notice).to_be_hidden()
    steps = view.get_by_role("list", name="Phases")
    expect(steps.locator("li[data-phase='complete']")).to_have_attribute("data-state", "cancelled")
    expect(steps.locator("li[data-state='completed'][data-phase='send']")).to_have_count(0)


def test_a_crash_after_a_failure_shows_its_own_log_lines(page: Any) -> None:
    failed, _ = finished(page, "fail", "failed")
    expect(failed.locator(".log-tail")).to_contain_text("echo_agent was asked to fail")
    crashed, _ = finished(page, "crash", "failed")
    expect(crashed.locator(".facts .reason")).to_have_text("host_exited")
    tail = crashed.locator(".log-tail")
    expect(tail).to_contain_text("crashing on purpose (exit 3)")
    expect(tail).not_to_contain_text("asked to fail")


def test_cancel_stays_in_reach_while_the_answer_grows(page: Any) -> None:
    page.set_viewport_size({"width": 800, "height": 700})
    # Every frame while the run streams: where Cancel is and whether the answer overflows.
    page.evaluate("""() => {
      window.__frames = [];
      const look = () => {
        const cancel = [...document.querySelectorAll('button')].find((b) => b.textContent === 'Cancel');
        const answer = document.querySelector('.run-view .answer');
        if (cancel && answer) {
          const box = cancel.getBoundingClientRect();
          window.__frames.push({ top: box.top, bottom: box.bottom,
            overflows: answer.scrollHeight > answer.clientHeight });
        }
        window.__look = requestAnimationFrame(look);
      };
      look();
    }""")
    view, _ = finished(page, "tokens 3000")
    frames = page.evaluate("() => { cancelAnimationFrame(window.__look); return window.__frames; }")
    grown = [f for f in frames if f["overflows"]]
    assert grown, f"no frame showed Cancel beside an overflowing answer: {frames[-3:]}"
    outside = [f for f in grown if f["top"] < 0 or f["bottom"] > 700]
    assert not outside, outside[:3]
    rerun = button(page, "Rerun").bounding_box()
    assert rerun is not None and rerun["y"] + rerun["height"] <= 700, rerun
    # The answer scrolls on its own: the pane around it does not grow with it.
    answer = view.locator(".answer")
    assert answer.evaluate("a => a.scrollHeight > a.clientHeight")
