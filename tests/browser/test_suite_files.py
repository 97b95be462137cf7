"""Suite files and repetitions on the page: a suite kept in playground/suites/ is listed with
its path, a broken file is named with its line, and a report of a suite run three times
marks a case whose answer is random `flaky` and a fixed case that no longer matches its
baseline `changed`; no serious axe-core violation light and dark, wide and narrow."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from tests.browser.accessibility import blocking_violations
from tests.browser.helpers import button, expect
from tests.support.procs import Stack

# A test Host behaviour whose answer is random: `dice` answers 16 random hex digits.
DICE = ('            elif command == "dice":\n'
        '                await self._stream_text(updater, os.urandom(8).hex())\n'
        '                await updater.complete()\n'
        '            elif command == "tokens":')


def EDIT_PROJECT(project: Path) -> None:
    agent = project / "app" / "agent.py"
    agent.write_text(agent.read_text().replace('            elif command == "tokens":', DICE))


def case(text: str, answer: str) -> dict[str, Any]:
    return {"kind": "run", "turns": [{"metadata": {}, "parts": [{"kind": "text", "text": text}],
                                      "resume": False}],
            "baseline": {"output": [{"kind": "text", "text": answer}], "reason": None,
                         "scores": [], "status": "completed"}}


def write_suite(project: Path, name: str) -> None:
    folder = project / "playground" / "suites"
    folder.mkdir(parents=True, exist_ok=True)
    doc = {"cases": [case("say these words back", "say these words back"),
                     case("dice", "0123456789abcdef"),
                     case("stream hello there", "hello world")],
           "format": "llamon-playground-suite/1", "name": name, "repeat": 3,
           "run_on_save": False}
    (folder / f"{name}.json").write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2))
    (folder / "broken.json").write_text('{\n  "name": "broken",\n  "cases": [,]\n}\n')


def test_a_file_suite_run_three_times_marks_flaky_and_changed(
        scheme_page: Any, page_stack: tuple[Stack, str], request: Any) -> None:
    page = scheme_page
    name = f"repeat-{request.node.callspec.id}"
    write_suite(page_stack[0].project, name)
    button(page, "Suites").click()
    suites = page.get_by_role("article", name="Suites")
    item = suites.locator(".suite-item", has_text=name)
    expect(item.locator(".suite-file")).to_have_text(f"playground/suites/{name}.json")
    expect(item).to_contain_text("3 cases, each run 3×")
    expect(suites.get_by_role("alert")).to_contain_text("playground/suites/broken.json:3")
    found = blocking_violations(page)
    assert not found, f"suites: {found}"

    suites.get_by_role("button", name=f"Run {name}", exact=True).click()
    report = page.get_by_role("article", name="Suite report")
    expect(report).to_have_attribute("data-status", "completed", timeout=60_000)
    rows = report.locator("tr.case-row")
    expect(rows).to_have_count(3)
    expect(rows.nth(0)).to_have_attribute("data-mark", "same")
    expect(rows.nth(1)).to_have_attribute("data-mark", "flaky")
    expect(rows.nth(2)).to_have_attribute("data-mark", "changed")
    expect(rows.nth(1).locator(".case-mark")).to_have_text("flaky")
    expect(rows.nth(1).locator(".case-repeat")).to_have_text("3 runs, 100% as baseline")
    expect(rows.nth(2)).to_contain_text("word_count 2")
    expect(report.locator(".suite-summary")).to_contain_text("1 flaky · each case run 3×")
    found = blocking_violations(page)
    assert not found, f"report: {found}"
    assert fits(report), "the cases table scrolls sideways at 1280 px"
    page.set_viewport_size({"width": 800, "height": 700})
    found = blocking_violations(page)
    assert not found, f"narrow report: {found}"
    assert fits(report), "the cases table scrolls sideways at 800 px"


def fits(report: Any) -> bool:
    """Whether the cases table fits its pane (its scroller has nothing to scroll)."""
    return bool(report.locator(".table-scroll").evaluate(
        "(node) => node.scrollWidth <= node.clientWidth + 1"))
