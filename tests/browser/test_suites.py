"""Suites on the page: picked runs saved as a suite, the Suites view, Run, the report filling
in from the suite run's progress events, each done row opening Compare of its baseline and
its new run; run on save, a report made the baselines, a suite deleted; and no serious
axe-core violation light and dark."""

from __future__ import annotations

import re
from typing import Any

from llamon_playground.common.contract import API_PREFIX
from tests.browser.accessibility import blocking_violations
from tests.browser.helpers import button, expect, finished, pick_box, slow_run_streaming


def save_picked(page: Any, runs: list[str], name: str) -> None:
    """Tick `runs` in the thread and save them as the suite `name` (the prompt answered)."""
    for run_id in runs:
        pick_box(page, run_id).check()
    page.once("dialog", lambda dialog: dialog.accept(name))
    plural = "s" if len(runs) > 1 else ""
    button(page, f"Save {len(runs)} picked run{plural} as a suite").click()


def start_suite(page: Any, name: str, runs: list[str]) -> Any:
    """Save `runs` as the suite `name`, press its Run: the report."""
    save_picked(page, runs, name)
    suites = page.get_by_role("article", name="Suites")
    cases = f"{len(runs)} case{'s' if len(runs) > 1 else ''}"
    expect(suites.locator(".suite-item", has_text=name)).to_contain_text(cases)
    suites.get_by_role("button", name=f"Run {name}", exact=True).click()
    report = page.get_by_role("article", name="Suite report")
    expect(report.get_by_role("heading")).to_have_text(f"Suite report: {name}")
    return report


def run_suite(page: Any, name: str, runs: list[str]) -> Any:
    report = start_suite(page, name, runs)
    expect(report).to_have_attribute("data-status", "completed")  # from the progress events
    return report


def test_picked_runs_saved_run_as_a_suite_and_a_row_opens_compare(page: Any) -> None:
    expect(button(page, "Save as suite")).to_be_disabled()
    _, first = finished(page, "stream alpha hello")
    _, second = finished(page, "refuse the beta request", "failed")
    report = run_suite(page, "smoke", [first, second])
    expect(report.get_by_role("progressbar", name="Cases finished")).to_have_attribute("value", "2")
    expect(report).to_contain_text("2 of 2 cases finished")
    rows = report.locator("tr.case-row")
    expect(rows).to_have_count(2)
    expect(rows.nth(0)).to_have_attribute("data-state", "done")
    expect(rows.nth(0)).to_contain_text("completed, as before")
    expect(rows.nth(1)).to_contain_text("failed, as before")
    # Each case is named by what it sends (never a bare "run") and its run's time.
    expect(rows.nth(0).locator(".case-name")).to_contain_text("stream alpha hello")
    expect(rows.nth(1).locator(".case-name")).to_contain_text("refuse the beta request")
    expect(rows.nth(0).locator(".case-name .when")).to_have_text(re.compile(r"^ \d\d:\d\d:\d\d$"))
    expect(report.locator(".suite-summary")).to_contain_text("moved status")
    expect(report).to_contain_text("Counts only")

    # A row opens Compare: the baseline (the picked run) on the left, the case's new run right.
    report.get_by_role("button", name="Compare case 1 with its baseline").click()
    compare = page.get_by_role("article", name="Compare")
    expect(compare.locator(".side-left .run-id")).to_have_text(first)
    expect(compare.locator(".side-right .run-id")).not_to_have_text(first)
    expect(compare.locator(".side-right")).to_contain_text("completed")

    # The Suites view again: the suite's last report.
    button(page, "Suites").click()
    page.get_by_role("button", name="Last report of smoke").click()
    expect(page.get_by_role("article", name="Suite report")).to_have_attribute("data-status", "completed")


def test_a_running_suite_shows_its_progress_and_cancels(page: Any) -> None:
    view, _ = slow_run_streaming(page, 1)
    button(page, "Cancel").click()
    expect(view).to_have_attribute("data-status", "cancelled")
    slow = view.get_attribute("data-run-id")
    _, quick = finished(page, "stream delta hello")
    report = start_suite(page, "slow first", [slow, quick])
    rows = report.locator("tr.case-row")
    # The first case's run streams for a while: the report says so as its progress comes.
    expect(rows.nth(0)).to_have_attribute("data-state", "running")
    expect(report).to_have_attribute("data-status", "running")
    expect(report).to_contain_text("0 of 2 cases finished")
    button(page, "Cancel suite run").click()
    expect(report).to_have_attribute("data-status", "cancelled")
    expect(rows.nth(0)).to_have_attribute("data-state", "skipped")
    expect(rows.nth(1)).to_contain_text("skipped (user_cancelled)")
    expect(report).to_contain_text("2 of 2 cases finished (2 skipped)")
    expect(button(page, "Cancel suite run")).to_have_count(0)


def test_a_suite_is_set_to_run_on_save_made_the_baseline_and_deleted(page: Any) -> None:
    _, run_id = finished(page, "stream epsilon hello")
    save_picked(page, [run_id], "controls")
    suites = page.get_by_role("article", name="Suites")
    item = suites.locator(".suite-item", has_text="controls")
    # Never run yet: Run and Delete, no "Last report" (and no stray text in its place).
    expect(item.get_by_role("button")).to_have_text(["Run", "Delete"])
    expect(item).not_to_contain_text("null")
    on_save = suites.get_by_role("checkbox", name="Run controls on each save")
    expect(on_save).not_to_be_checked()
    on_save.check()
    expect(on_save).to_be_enabled()  # the PATCH answered
    button(page, "Suites").click()  # read again: the daemon kept it
    expect(page.get_by_role("checkbox", name="Run controls on each save")).to_be_checked()

    page.get_by_role("button", name="Run controls", exact=True).click()
    report = page.get_by_role("article", name="Suite report")
    expect(report).to_have_attribute("data-status", "completed")
    report.get_by_role("button", name="Make these results the baselines").click()
    expect(report.locator(".baseline-now")).to_contain_text("the next runs compare with them")
    button(page, "Suites").click()
    page.get_by_role("button", name="Last report of controls").click()
    expect(page.get_by_role("article", name="Suite report").locator(".baseline-now")).to_have_text(
        "These results are the baselines.")

    # Delete asks once, in place; Keep leaves the suite, Yes removes it.
    button(page, "Suites").click()
    suites = page.get_by_role("article", name="Suites")
    suites.get_by_role("button", name="Delete controls").click()
    expect(suites).to_contain_text('Delete "controls" and its reports?')
    suites.get_by_role("button", name="Keep").click()
    expect(suites.get_by_role("button", name="Run controls", exact=True)).to_be_visible()
    suites.get_by_role("button", name="Delete controls").click()
    suites.get_by_role("button", name="Yes, delete controls").click()
    expect(page.get_by_role("article", name="Suites").locator(".suite-item", has_text="controls")).to_have_count(0)


def test_the_baseline_is_chosen_in_the_suites_view_and_runs_share_a_session(
        page: Any, front_url: str) -> None:
    _, run_id = finished(page, "stream zeta hello")
    run_suite(page, "chosen", [run_id])
    button(page, "Suites").click()
    page.get_by_role("button", name="Run chosen", exact=True).click()
    second = page.get_by_role("article", name="Suite report")
    expect(second).to_have_attribute("data-status", "completed")
    api = f"{front_url}{API_PREFIX}"
    suite = next(x for x in page.request.get(f"{api}/suites").json()["suites"]
                 if x["name"] == "chosen")
    runs = page.request.get(f"{api}/suites/{suite['id']}/runs").json()["suite_runs"]
    older, newer = runs[1], runs[0]
    # Both suite runs put their cases' runs in one session, named once in the list.
    assert older["session_id"] == newer["session_id"]
    expect(page.locator(".session-item", has_text="suite chosen")).to_have_count(1)
    expect(page.locator(".session-item", has_text="suite chosen")).to_contain_text("suite chosen (2)")

    button(page, "Suites").click()
    suites = page.get_by_role("article", name="Suites")
    suites.get_by_role("button", name="Baseline of chosen").click()
    pick = suites.get_by_role("combobox", name="Baseline of chosen")
    expect(pick).to_be_focused()
    expect(pick.locator("option:checked")).to_have_text("the saved runs (current)")
    expect(pick.locator("option:not([disabled])")).to_have_count(2)
    pick.select_option(older["id"])
    suites.get_by_role("button", name="Use as the baseline of chosen").click()
    expect(suites.locator(".baseline-now")).to_have_text("Baseline set: the next runs compare with it.")
    cases = page.request.get(f"{api}/suites/{suite['id']}").json()["cases"]
    assert [c["baseline"]["suite_run_id"] for c in cases] == [older["id"]]
    # Asked again, it names the chosen run as the current one.
    suites.get_by_role("button", name="Baseline of chosen").click()
    expect(pick.locator("option:checked")).to_contain_text("(current)")
    expect(pick).to_have_value(older["id"])
    found = blocking_violations(page)
    assert not found, found
    suites.get_by_role("button", name="Keep").click()
    expect(suites.get_by_role("button", name="Baseline of chosen")).to_be_visible()


def test_the_suite_views_have_no_serious_violation(scheme_page: Any, request: Any) -> None:
    page = scheme_page
    _, run_id = finished(page, "stream gamma hello")
    run_suite(page, f"a11y {request.node.callspec.id}", [run_id])
    found = blocking_violations(page)
    assert not found, f"report: {found}"
    button(page, "Suites").click()
    expect(page.get_by_role("article", name="Suites")).to_be_visible()
    found = blocking_violations(page)
    assert not found, f"suites: {found}"
    page.set_viewport_size({"width": 800, "height": 700})
    page.get_by_role("button", name=f"Last report of a11y {request.node.callspec.id}").click()
    expect(page.get_by_role("article", name="Suite report")).to_be_visible()
    found = blocking_violations(page)
    assert not found, f"narrow report: {found}"
