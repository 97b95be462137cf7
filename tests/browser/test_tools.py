"""The page's tools in a real Chromium: trace and scores, snippets, edit and rerun, compare,
Host logs, every output kind as text, and a front restarted under a streaming run."""

from __future__ import annotations

import re
from typing import Any

from llamon_playground.common.contract import API_PREFIX
from tests.browser.helpers import (
    XSS,
    button,
    expect,
    expect_rerun,
    finished,
    send,
    slow_run_streaming,
    ticks_once,
)
from tests.support.procs import Stack


def test_trace_and_scores(page: Any) -> None:
    view = send(page, "stream hello there")
    expect(view).to_have_attribute("data-status", "completed")
    view.get_by_text("Trace and scores").click()
    rows = view.locator("table.scores tbody tr")
    expect(rows).to_have_count(2)
    expect(rows.first).to_contain_text("word_count")
    # An Agent's node has no source target: its score offers no "Where is" that would fail.
    expect(rows.first.locator(".node-name")).to_have_text("echo")
    expect(rows.first.get_by_role("button", name="Where is echo?")).to_have_count(0)
    node = view.locator(".timeline .trace-row[data-type='node.start']")
    expect(node.locator(".node-name")).to_have_text("echo")
    expect(node.locator(".bar")).to_have_attribute("data-state", "ended")
    # Nor does its trace row (a Flow's rows keep theirs, and it leads to the source:
    # test_flow.py clicks approve's and notify's).
    expect(node.get_by_role("button", name=re.compile(r"^Where is"))).to_have_count(0)
    expect(node.locator(".source-target")).to_have_count(0)
    marks = view.locator(".timeline .trace-row[data-type='evaluation.result']")
    expect(marks).to_have_count(2)
    expect(marks.first).to_contain_text("word_count 2 · pass")


def test_copy_curl_and_copy_python(page: Any, front_url: str) -> None:
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=front_url)
    view = send(page, "stream for a snippet")
    expect(view).to_have_attribute("data-status", "completed")
    for name, kind, marker in (("Copy curl", "curl", "curl "), ("Copy Python", "python",
                                                               "import ")):
        button(page, name).click()
        snippet = view.locator("pre.snippet")
        expect(snippet).to_have_attribute("data-kind", kind)
        expect(snippet).to_contain_text(marker)
        expect(snippet).to_contain_text("for a snippet")
        assert page.evaluate("navigator.clipboard.readText()") == snippet.text_content()


def test_edit_and_rerun(page: Any) -> None:
    _, first = finished(page, "stream first words")
    button(page, "Edit and rerun").click()
    message = page.get_by_label("Message")
    expect(message).to_have_value("stream first words")
    message.fill("stream edited words")
    button(page, "Send").click()
    expect_rerun(page, first, "edited words")


def test_compare_two_runs(page: Any) -> None:
    for text in ("stream alpha beta", "stream alpha gamma"):
        expect(send(page, text)).to_have_attribute("data-status", "completed")
    compare = button(page, "Compare")
    expect(compare).to_be_disabled()
    boxes = page.locator(".run-item input[type=checkbox]")
    expect(boxes).to_have_count(2)
    boxes.nth(1).check()  # the newer picked first: the older run is still the left side
    boxes.nth(0).check()
    compare.click()
    view = page.get_by_role("article", name="Compare")
    diff = view.locator("pre.diff")
    expect(diff).to_contain_text("-alpha beta")
    expect(diff).to_contain_text("+alpha gamma")
    expect(view.locator("table.scores tbody tr")).to_have_count(2)


def test_host_logs_panel(page: Any) -> None:
    button(page, "Host logs").click()
    panel = page.get_by_role("region", name="Host logs panel")
    expect(panel).to_be_visible()
    expect(panel.locator(".log").first).to_contain_text("[1]")
    button(page, "Close logs").click()
    expect(panel).to_be_hidden()


def test_every_output_kind_is_text(page: Any, front_url: str) -> None:
    api = f"{front_url}{API_PREFIX}"
    session = page.request.post(f"{api}/sessions", data={"title": XSS}).json()["id"]
    run_id = page.request.post(f"{api}/sessions/{session}/runs", data={"parts": [
        {"kind": "text", "text": f"data {XSS}"},
        {"kind": "data", "data": {"schema": XSS, "note": XSS}},
        {"kind": "file", "name": XSS, "mime": "text/html", "bytes_base64": "PGI+aGk8L2I+"},
    ]}).json()["run_id"]
    page.goto(f"{front_url}/#{run_id}")  # a link to a run opens it
    view = page.locator("article.run-view")
    expect(view).to_have_attribute("data-status", "completed")
    answer = view.locator(".answer")
    expect(answer.locator(".part.data pre")).to_contain_text('"note": "<img src=x onerror=')
    link = answer.locator(".part.file a")
    expect(link).to_have_attribute("href", re.compile(rf"^{API_PREFIX}/files/[0-9a-f]{{64}}$"))
    expect(answer.locator(".part.file", has_text="report.pdf")).to_contain_text(
        "not downloaded, unavailable for replay")
    view.get_by_text("Input", exact=True).click()
    expect(view.locator(".input-parts .part.text")).to_have_text(f"data {XSS}")
    expect(view.locator(".input-parts .part.file")).to_contain_text(XSS)
    expect(view.locator(".input-parts .part.data summary")).to_have_text(f"data · {XSS}")
    expect(page.locator(".session-item", has_text=XSS)).to_have_count(1)
    assert page.locator("img, b").count() == 0
    assert page.evaluate("window.__xss") is None


def test_files_and_metadata_from_the_composer(page: Any, front_url: str) -> None:
    page.get_by_text("Files and metadata").click()
    page.get_by_label("Attach files").set_input_files(files=[{
        "name": "notes.txt", "mimeType": "text/plain", "buffer": b"some notes\n"}])
    page.get_by_label("File URI").fill("https://example.invalid/big.pdf")
    button(page, "Add URI").click()
    attachments = page.get_by_role("list", name="Attachments")
    expect(attachments.locator("li")).to_have_count(2)
    page.get_by_label("Metadata (JSON object)").fill("not json")
    page.get_by_label("Message").fill("data")
    button(page, "Send").click()
    expect(page.locator("#composer-hint")).to_contain_text("metadata: not JSON")
    assert page.locator("article.run-view").count() == 0  # nothing was sent
    page.get_by_label("Metadata (JSON object)").fill('{"userId": "user-1"}')
    view = send(page, "data")
    expect(view).to_have_attribute("data-status", "completed")
    expect(attachments.locator("li")).to_have_count(0)  # sent: the composer is clear again
    view.get_by_text("Input", exact=True).click()
    inputs = view.locator(".input-parts .part.file")
    expect(inputs.first).to_contain_text("notes.txt")
    expect(inputs.first.locator("a")).to_have_attribute("download", "notes.txt")
    expect(inputs.nth(1)).to_contain_text("not downloaded, unavailable for replay")
    run = page.request.get(f"{front_url}{API_PREFIX}/runs/{view.get_attribute('data-run-id')}")
    assert run.json()["input"]["metadata"] == {"userId": "user-1"}


def test_a_restarted_front_resumes_the_stream_with_every_delta_once(
        page: Any, page_stack: tuple[Stack, str]) -> None:
    stack, url = page_stack
    view, answer = slow_run_streaming(page, 2)
    port = int(url.rsplit(":", 1)[1])
    for front in list(stack.fronts):
        front.stop()
        stack.fronts.remove(front)
    stack.start_front(port)
    # The browser reconnects on its own (Last-Event-ID) and the ticks go on from there.
    expect(answer).to_contain_text("tick 8 ", timeout=30_000)
    streamed = answer.text_content() or ""
    ticks_once(streamed)
    button(page, "Cancel").click()
    expect(view).to_have_attribute("data-status", "cancelled")
    # The final answer is Markdown: its paragraph drops the last tick's trailing space.
    assert (answer.text_content() or "").startswith(streamed.rstrip())

