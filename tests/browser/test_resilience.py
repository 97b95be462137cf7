"""The page when things move under it: a trace whose nodes nest and stay open (posted on
the real capture channel, as a Host would), and a daemon that dies under a streaming run
and comes back on the same runtime dir."""

from __future__ import annotations

import re
import signal
from typing import Any

from llamon_playground.host_manager.host_side.capture import PlaygroundCapture
from tests.browser.helpers import XSS, button, expect, send, slow_run_streaming, ticks_once
from tests.support.procs import Stack

# Cold Host generations: the capture token is then in the Host's environment block, where
# the test reads it to post a trace as the Host would (a warm generation's is in its memory
# only; docs/host.md, warm starts).
PYPROJECT_EXTRA = "warm_start = false\n"


def host_capture(stack: Stack) -> PlaygroundCapture:
    assert stack.daemon is not None
    for proc in stack.daemon.descendants():
        token = proc.environ().get("LLAMON_CAPTURE_TOKEN")
        if token:
            return PlaygroundCapture(token, str(stack.settings.socket_path))
    raise AssertionError("no Host with a capture token")


def test_nested_nodes_indent_and_an_open_node_grows_with_the_clock(
        page: Any, page_stack: tuple[Stack, str]) -> None:
    stack, _ = page_stack
    view = send(page, "slow")
    expect(view.locator(".answer")).to_contain_text("tick 1 ")
    run_id = view.get_attribute("data-run-id") or ""
    capture = host_capture(stack)
    # What a Host with a node inside a node would send: the outer one stays open.
    assert capture.emit(run_id, [
        {"type": "node.start", "node": "outer"}, {"type": "node.start", "node": XSS},
        {"type": "node.end", "node": XSS},
        {"type": "evaluation.result", "evaluator": "inner_check", "score": 0,
         "passStatus": "fail", "node": XSS}])
    view.get_by_text("Trace and scores").click()
    timeline = view.get_by_role("region", name="Trace")
    rows = timeline.locator(".trace-row[data-type='node.start']")
    expect(rows).to_have_count(2)
    expect(rows.nth(0)).to_have_class(re.compile(r"\bdepth-0\b"))
    expect(rows.nth(1)).to_have_class(re.compile(r"\bdepth-1\b"))  # started inside outer
    expect(rows.nth(1).locator(".node-name")).to_have_text(XSS)  # a node name, as text
    outer = rows.nth(0).locator(".bar")
    expect(outer).to_have_attribute("data-state", "running")
    expect(outer).to_have_accessible_name(re.compile(r"^outer, running, "))
    grown = int(outer.get_attribute("data-end") or 0)
    # Still open while the run goes on: its end follows the clock.
    expect(outer).not_to_have_attribute("data-end", str(grown))
    assert int(outer.get_attribute("data-end") or 0) > grown
    expect(timeline.locator(".mark")).to_have_attribute("data-pass", "fail")
    assert capture.emit(run_id, [{"type": "node.end", "node": "outer"}])
    expect(outer).to_have_attribute("data-state", "ended")
    button(page, "Cancel").click()
    expect(view).to_have_attribute("data-status", "cancelled")
    assert page.locator("img").count() == 0 and page.evaluate("window.__xss") is None


def test_a_restarted_daemon_ends_the_run_and_the_page_shows_it_once(
        page: Any, page_stack: tuple[Stack, str]) -> None:
    stack, _ = page_stack
    view, answer = slow_run_streaming(page, 3)
    run_id = view.get_attribute("data-run-id") or ""
    stream = f"/runs/{run_id}/events"
    assert stack.daemon is not None
    stack.remember_hosts()  # the Host it leaves behind is stopped by the next daemon
    # A crash, not a clean stop: the run is left running in history, nothing ends it.
    with page.expect_response(lambda r: stream in r.url and r.status == 503, timeout=30_000):
        stack.daemon.signal(signal.SIGKILL)
        stack.daemon.wait(10)
    seen = answer.text_content() or ""
    # The browser gave up on the 503; the page reopens after the last event id it saw.
    with page.expect_response(lambda r: stream in r.url and "after=" in r.url
                              and r.status == 200, timeout=30_000):
        stack.start_daemon()
    # Boot recovery ended the run: interrupted, its streamed text kept as the output.
    expect(view).to_have_attribute("data-status", "interrupted")
    expect(view.locator(".facts .reason")).to_have_text("daemon_restarted")
    expect(answer).to_have_attribute("data-source", "final")
    final = answer.locator(".part.text").text_content() or ""
    assert ticks_once(final) >= 3  # every delta once, in order
    assert final.startswith(seen.rstrip()), (seen, final)  # Markdown drops the last space
    # The stored parts, shown once: the text, then the part that says what interrupted it.
    expect(answer.locator(".part")).to_have_count(2)
    expect(answer.locator(".part.text")).to_have_count(1)
    expect(answer.locator(".part.error")).to_contain_text("killed or crashed")
