"""History-wide tools in a real Chromium: bundles out and in, delete all, the Host panel, and
a run ended by an outside edit. Their own module: they clear history and restart the Host."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from llamon_playground.common.contract import API_PREFIX
from tests.browser.helpers import accept_dialogs, button, expect, send
from tests.support.procs import Stack


def test_export_then_import_a_bundle(page: Any, tmp_path: Path) -> None:
    view = send(page, "stream bundle me")
    expect(view).to_have_attribute("data-status", "completed")
    sessions = page.locator(".session-item")
    before = sessions.count()
    asked = accept_dialogs(page)
    with page.expect_download() as download:
        button(page, "Export bundle").click()
    assert "Anyone you give it to can read them all" in asked[0]  # the warning came first
    saved = tmp_path / "bundle.json"
    download.value.save_as(saved)
    bundle = json.loads(saved.read_text())
    assert bundle["format"] == "llamon.playground.bundle/1"
    assert [r["label"] for r in bundle["runs"]] == [None]
    page.get_by_label("Import bundle").set_input_files(saved)
    expect(page.locator("#notice")).to_have_text("Imported 1 session and 1 run.")
    expect(sessions).to_have_count(before + 1)
    # The view went to the imported session (the newest: first): its thread shows the
    # imported turn.
    imported = sessions.first
    expect(imported).to_have_attribute("aria-current", "true")
    # Told apart from the session it copies: the daemon marks the imported title.
    # Its run count and its last activity (its run's end: today, so a time).
    expect(imported).to_have_text(re.compile(r"^stream bundle me \(imported\) \(1\) · \d\d:\d\d$"))
    expect(page.get_by_label("Session title")).to_have_value("stream bundle me (imported)")
    expect(page.locator(".run-card .turn-input")).to_have_text(["you: stream bundle me"])


def test_export_takes_the_ticked_runs(page: Any, tmp_path: Path) -> None:
    for text in ("stream kept out", "stream picked one"):
        expect(send(page, text)).to_have_attribute("data-status", "completed")
    page.get_by_label("Pick ", exact=False).last.check()  # oldest first: "picked one"
    export = button(page, "Export 1 picked run")
    accept_dialogs(page)
    with page.expect_download() as download:
        export.click()
    saved = tmp_path / "picked.json"
    download.value.save_as(saved)
    bundle = json.loads(saved.read_text())
    assert len(bundle["runs"]) == 1 and len(bundle["sessions"]) == 1
    assert bundle["runs"][0]["input"]["parts"][0]["text"] == "stream picked one"
    assert download.value.suggested_filename == f"llamon-playground-{bundle['runs'][0]['id']}.json"


def test_an_invalid_bundle_shows_the_apis_error(page: Any) -> None:
    page.get_by_label("Import bundle").set_input_files(files=[{
        "name": "bad.json", "mimeType": "application/json",
        "buffer": json.dumps({"format": "something/else"}).encode()}])
    expect(page.locator("#notice")).to_contain_text("400 unsupported_bundle_format")


def test_the_newest_sessions_show_first_and_older_ones_when_asked(
        page: Any, front_url: str) -> None:
    sessions = [{"id": f"s{n}", "title": f"old {n}", "created_at": "2026-01-01T00:00:00Z"}
                for n in range(150)]
    answer = page.request.post(f"{front_url}{API_PREFIX}/bundles/import", data={
        "format": "llamon.playground.bundle/1", "sessions": sessions, "runs": [],
        "events": [], "blobs": {}})
    assert answer.status == 201, answer.text()
    reads: list[str] = []
    page.on("request", lambda r: reads.append(r.url) if "/sessions?" in r.url else None)
    page.reload()
    items = page.locator(".session-item")
    # One page, newest first: the last imported on top, nothing older read yet.
    expect(page.locator("#session-list")).to_have_attribute("data-loaded", "100")
    expect(items.first).to_have_text(re.compile(r"^old 149 \(imported\) \(0\) · "))
    assert all("after=" not in url for url in reads), reads
    oldest = page.locator(".session-item", has_text="old 0 (imported)")
    expect(oldest).to_have_count(0)
    button(page, "Older sessions").click()
    expect(oldest).to_have_count(1)
    expect(page.locator("#session-list")).not_to_have_attribute("data-loaded", "100")
    assert any("after=" in url for url in reads), reads


def test_a_first_page_read_again_never_hides_older_sessions(
        page: Any, front_url: str) -> None:
    """A first page read again (a live event) that answers after "Older sessions" must not
    put the shorter list back: the list's reads go one at a time."""
    sessions = [{"id": f"q{n}", "title": f"older {n}", "created_at": "2026-01-01T00:00:00Z"}
                for n in range(150)]
    answer = page.request.post(f"{front_url}{API_PREFIX}/bundles/import", data={
        "format": "llamon.playground.bundle/1", "sessions": sessions, "runs": [],
        "events": [], "blobs": {}})
    assert answer.status == 201, answer.text()
    page.reload()
    expect(page.locator("#connection")).to_have_attribute("data-state", "live")
    expect(page.locator("#more-sessions")).to_be_visible()
    held: list[Any] = []
    holding = [True]

    def release() -> None:
        holding[0] = False  # a first page read after this goes on at once
        while held:
            held.pop().continue_()

    def route(request_route: Any) -> None:
        if "after=" not in request_route.request.url:
            if holding[0]:
                held.append(request_route)  # the first page, read again: held back
            else:
                request_route.continue_()
            return
        # The older page answers first; only then does the held first page go on. Without
        # one read at a time, that order puts the first page's shorter list back last.
        request_route.fulfill(response=request_route.fetch())
        release()

    page.route(re.compile(r"/sessions\?order=newest"), route)
    # A title changed elsewhere: the page reads its first page of sessions again.
    with page.expect_request(lambda r: "/sessions?order=newest" in r.url):
        newest = answer.json()["sessions"]["q149"]
        renamed = page.request.patch(f"{front_url}{API_PREFIX}/sessions/{newest}",
                                     data={"title": "fresh"})
        assert renamed.status == 200, renamed.text()
    button(page, "Older sessions").click()
    # Two frames for a read the click started at once to reach the route (it releases the
    # held page itself); one queued behind the held page is released here.
    page.evaluate("() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))")
    release()
    total = len(page.request.get(f"{front_url}{API_PREFIX}/sessions?limit=1000").json()["sessions"])
    expect(page.locator(".session-item", has_text="fresh")).to_have_count(1)
    expect(page.locator(".session-item", has_text="older 0 (imported)")).to_have_count(1)
    expect(page.locator(".session-item")).to_have_count(min(total, 200))  # two pages
    page.unroute(re.compile(r"/sessions\?order=newest"))


def test_sessions_made_and_deleted_elsewhere_show_at_once(page: Any, front_url: str) -> None:
    expect(page.locator("#connection")).to_have_attribute("data-state", "live")
    made = page.request.post(f"{front_url}{API_PREFIX}/sessions", data={"title": "from the cli"})
    assert made.status == 201, made.text()
    item = page.locator(".session-item", has_text="from the cli")
    expect(item).to_have_count(1)  # no reload: the page was told
    item.click()
    expect(page.get_by_label("Session title")).to_have_value("from the cli")
    gone = page.request.delete(f"{front_url}{API_PREFIX}/sessions/{made.json()['id']}",
                               headers={"Content-Type": "application/json"})
    assert gone.status == 200, gone.text()
    expect(item).to_have_count(0)
    expect(page.locator("#session-head")).to_be_hidden()  # the open session closed with it


def test_delete_all_history_says_what_goes(page: Any) -> None:
    expect(send(page, "stream going away")).to_have_attribute("data-status", "completed")
    expect(page.locator(".session-item").first).to_be_visible()
    asked = accept_dialogs(page)
    button(page, "Delete all history").click()
    expect(page.locator(".session-item")).to_have_count(0)
    assert asked and asked[0].startswith("Delete all history:") and " runs" in asked[0]


def test_the_host_panel_stops_and_starts_the_host(page: Any) -> None:
    badge = page.locator("#host-state")
    expect(badge).to_have_attribute("data-state", "ready")
    generation = int(badge.get_attribute("data-generation") or 0)
    badge.click()
    panel = page.get_by_role("region", name="Host")
    expect(panel).to_contain_text("restarts")
    button(page, "Stop Host").click()
    expect(badge).to_have_attribute("data-state", "stopped")
    button(page, "Start Host").click()
    expect(badge).to_have_attribute("data-state", "ready")
    expect(badge).to_have_attribute("data-generation", str(generation + 1))


def test_an_outside_edit_ends_the_run_and_says_so(
        page: Any, page_stack: tuple[Stack, str]) -> None:
    stack, _ = page_stack
    view = send(page, "slow")
    expect(view.locator(".answer")).to_contain_text("tick 1 ")
    agent = stack.project / "app" / "agent.py"
    agent.write_text(agent.read_text() + "\n# edited outside the run\n")
    expect(view).to_have_attribute("data-status", "failed", timeout=30_000)
    expect(view.locator(".reason")).to_have_text("runtime_restarted")
    expect(page.locator("#notice")).to_contain_text("runtime_restarted")

