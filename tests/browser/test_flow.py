"""The page on a Flow (examples/flow_project): the composer's contract tabs with their JSON
drafts, required fields and the start node's source target, sent as a data part; the JSON
box; the trace timeline; the graph with a run's path; a score's node source."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from tests.browser.accessibility import blocking_violations
from tests.browser.helpers import XSS, button, expect, send

EXAMPLE = "flow_project"


def test_contract_tabs_draft_a_data_part(page: Any, page_stack: Any) -> None:
    stack, _ = page_stack
    tab = button(page, "approve: request")
    expect(button(page, "escalate: request")).to_be_visible()
    tab.click()
    expect(tab).to_have_attribute("aria-pressed", "true")
    draft = json.loads(page.get_by_label("Message").input_value())
    assert draft["schema"] == "approval.v1"
    assert (draft["requestId"], draft["amount"], draft["urgent"], draft["requester"],
            draft["tags"]) == ("", 0, False, {}, [])
    hint = page.locator("#composer-hint")
    expect(hint).to_contain_text("required: requestId, amount, requester")
    link = hint.locator(".source-target a")
    expect(link).to_have_text(re.compile(r"^app/nodes\.py:\d+$"))
    line = (link.text_content() or "").rsplit(":", 1)[1]
    expect(link).to_have_attribute("href", f"vscode://file{stack.project}/app/nodes.py:{line}")
    draft.update(requestId="r-1", amount=12.5, requester={"name": "Ada"})
    view = send(page, json.dumps(draft))
    expect(view).to_have_attribute("data-status", "completed")
    expect(view.locator(".answer .part.text")).to_contain_text("approve -> notify")
    expect(view.locator(".input-parts .part.data summary")).to_have_text("data · approval.v1")


def test_text_that_is_not_an_object_is_not_sent(page: Any) -> None:
    button(page, "escalate: request").click()
    page.get_by_label("Message").fill("[1, 2]")
    button(page, "Send").click()
    expect(page.locator("#composer-hint")).to_have_text("data part: not a JSON object")
    assert page.locator("article.run-view").count() == 0


def test_the_trace_is_a_timeline(page: Any) -> None:
    csp: list[str] = []
    page.on("console", lambda m: csp.append(m.text) if "Content Security Policy" in m.text
            else None)
    button(page, "approve: request").click()
    draft = json.loads(page.get_by_label("Message").input_value())
    draft.update(requestId=XSS, amount=5, requester={"name": "Ada"})
    view = send(page, json.dumps(draft))
    expect(view).to_have_attribute("data-status", "completed")
    view.get_by_text("Trace and scores").click()
    timeline = view.get_by_role("region", name="Trace")
    bars = timeline.locator(".bar")
    expect(bars).to_have_count(2)  # one bar per node, in the order they ran
    assert [bars.nth(i).get_attribute("data-node") for i in range(2)] == ["approve", "notify"]
    spans = [(int(bars.nth(i).get_attribute("data-start") or -1),
              int(bars.nth(i).get_attribute("data-end") or -1)) for i in range(2)]
    assert 0 <= spans[0][0] <= spans[0][1] <= spans[1][0] <= spans[1][1], spans
    for i, name in enumerate(("approve", "notify")):
        expect(bars.nth(i)).to_have_attribute("data-state", "ended")
        expect(bars.nth(i)).to_have_accessible_name(re.compile(rf"^{name}, [\d.]+ m?s$"))
    # Positions are set through CSSOM, which the CSP allows: nothing was refused.
    assert bars.first.evaluate("b => getComputedStyle(b).getPropertyValue('--at')").endswith("%")
    bars.first.focus()  # the bars are in the tab order; focus writes the times as text
    detail = timeline.locator(".timeline-detail")
    expect(detail).to_contain_text(re.compile(r"^approve: started \+[\d.]+ m?s .*ended \+"))
    mark = timeline.locator(".mark")
    expect(mark).to_have_count(1)
    expect(mark).to_have_attribute("data-pass", "pass")
    expect(timeline.locator(".trace-row[data-type='evaluation.result']")).to_contain_text(
        "decided 1 · pass")
    page.keyboard.press("Tab")  # approve's "Where is" button, then notify's bar
    expect(timeline.get_by_role("button", name="Where is approve?")).to_be_focused()
    page.keyboard.press("Tab")
    expect(bars.nth(1)).to_be_focused()
    expect(detail).to_contain_text("notify: started +")
    mark.focus()
    expect(detail).to_contain_text(f"(request {XSS}: approved)")  # the Host's text, as text
    timeline.get_by_role("button", name="Where is approve?").click()
    expect(timeline.locator(".source-target a")).to_have_text(
        re.compile(r"^app/nodes\.py:\d+$"))
    assert page.locator("img").count() == 0 and page.evaluate("window.__xss") is None
    assert not csp, csp


def test_the_json_box_grows_and_points_at_a_parse_error(page: Any) -> None:
    message = page.get_by_label("Message")
    small = message.bounding_box()
    button(page, "approve: request").click()
    grown = message.bounding_box()
    assert small is not None and grown is not None and grown["height"] > small["height"]
    assert message.evaluate("m => m.scrollHeight <= m.clientHeight + 2")  # the draft fits
    broken = '{\n  "schema": "approval.v1",\n  "amount" 5\n}'
    message.fill(broken)
    button(page, "Send").click()
    hint = page.locator("#composer-hint")
    expect(hint).to_contain_text("(line 3, column 12)")
    expect(hint).to_have_attribute("data-line", "3")
    expect(message).to_be_focused()
    at = message.evaluate("m => m.selectionStart")
    assert broken[at] == "5", (at, broken[at:at + 5])
    assert page.locator("article.run-view").count() == 0


def test_a_score_that_names_a_node_leads_to_its_source_and_graph_node(page: Any) -> None:
    button(page, "approve: request").click()
    draft = json.loads(page.get_by_label("Message").input_value())
    draft.update(requestId="r-2", amount=3, requester={"name": "Ada"})
    view = send(page, json.dumps(draft))
    expect(view).to_have_attribute("data-status", "completed")
    view.get_by_text("Trace and scores").click()
    row = view.locator("table.scores tbody tr", has_text="decided")
    expect(row.locator(".score-node .node-name")).to_have_text("notify")
    row.get_by_role("button", name="Where is notify?").click()
    expect(row.locator(".source-target a")).to_have_text(re.compile(r"^app/nodes\.py:\d+$"))
    # And to the node in the graph: the Graph opens, the node is marked, in view, focused.
    view.locator(".graph-box > summary").click()
    graph = view.get_by_role("group", name="Graph")
    expect(graph).to_be_hidden()
    row.get_by_role("button", name="Show notify in the graph").click()
    expect(graph).to_be_visible()
    notify = graph.locator(".graph-node[data-node='notify']")
    expect(notify).to_have_attribute("data-focus", "true")
    expect(notify).to_be_focused()
    expect(notify).to_be_in_viewport()
    expect(graph.locator(".graph-node[data-focus]")).to_have_count(1)


def test_the_graph_shows_the_runs_path_and_leads_to_the_trace(page: Any) -> None:
    csp: list[str] = []
    page.on("console", lambda m: csp.append(m.text) if "Content Security Policy" in m.text
            else None)
    button(page, "approve: request").click()
    draft = json.loads(page.get_by_label("Message").input_value())
    draft.update(requestId="r-3", amount=4, requester={"name": "Ada"})
    view = send(page, json.dumps(draft))
    graph = view.get_by_role("group", name="Graph")
    expect(graph).to_be_visible()
    for node in ("approve", "escalate", "notify"):
        expect(graph.locator(f".graph-node[data-node='{node}']")).to_have_count(1)
    expect(view).to_have_attribute("data-status", "completed")
    # The path it took: START → approve → notify → END, escalate not reached.
    taken = graph.locator(".graph-edge[data-taken]")
    expect(taken).to_have_count(3)
    assert sorted(f"{e.get_attribute('data-source')}>{e.get_attribute('data-target')}"
                  for e in taken.all()) == ["__start__>approve", "approve>notify",
                                             "notify>__end__"]
    approve = graph.get_by_role("button", name=re.compile(r"^approve: done, [\d.]+ m?s"))
    expect(approve).to_be_visible()
    expect(graph.get_by_role("button", name="escalate: not reached")).to_be_visible()
    expect(graph.locator(".graph-node[data-node='notify']")).to_have_attribute("data-pass", "pass")
    # Layers: START above approve above notify above END.
    ys = [graph.locator(f".graph-node[data-node='{n}'] rect").get_attribute("y")
          for n in ("__start__", "approve", "notify", "__end__")]
    assert [float(y or 0) for y in ys] == sorted(float(y or 0) for y in ys), ys
    approve.click()
    timeline = view.get_by_role("region", name="Trace")
    expect(timeline.locator(".bar[data-node='approve']")).to_be_focused()
    page.keyboard.press("Escape")  # and back to the graph
    expect(approve).to_be_focused()
    assert not csp, csp


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_graph_view_has_no_serious_violation(browser: Any, page_stack: Any, scheme: str) -> None:
    stack, url = page_stack
    context = browser.new_context(viewport={"width": 1280, "height": 720}, bypass_csp=True,
                                  color_scheme=scheme)
    tab = context.new_page()
    tab.goto(f"{url}/?token={stack.token}")
    button(tab, "approve: request").click()
    draft = json.loads(tab.get_by_label("Message").input_value())
    draft.update(requestId="r-4", amount=4, requester={"name": "Ada"})
    view = send(tab, json.dumps(draft))
    expect(view).to_have_attribute("data-status", "completed")
    expect(view.get_by_role("group", name="Graph")).to_be_visible()
    view.get_by_text("Trace and scores").click()
    view.get_by_role("button", name="Show notify in the graph").click()
    expect(view.locator(".graph-node[data-focus]")).to_have_count(1)
    found = blocking_violations(tab)
    context.close()
    assert not found, found


def test_a_flow_shows_no_agent_card_hint(page: Any) -> None:
    expect(button(page, "approve: request")).to_be_visible()
    expect(page.get_by_role("group", name="Examples")).to_be_hidden()
