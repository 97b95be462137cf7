"""The page on a Flow (examples/flow_project) from its first moment: the graph is there
before any run (read from source, no Host needed), and a run lights each node as it starts
and ends (the example sends its node events as they happen): a slow node reads "running"
while it runs, the node after it not reached yet."""

from __future__ import annotations

import json
import re
from typing import Any

from tests.browser.accessibility import blocking_violations
from tests.browser.helpers import button, expect, send

EXAMPLE = "flow_project"


def test_the_graph_is_there_before_any_run(scheme_page: Any, page_stack: Any) -> None:
    page = scheme_page
    stack, _ = page_stack
    pane = page.get_by_role("region", name="Run view")
    overview = pane.locator(".graph-overview")
    expect(overview).to_be_visible()
    nodes = overview.locator(".graph-node")
    expect(nodes).to_have_count(5)  # START, approve, escalate, notify, END
    for name in ("approve", "escalate", "notify"):
        # Named, never "not reached": no run is behind this graph.
        expect(overview.locator(f"[data-node='{name}']")).to_have_accessible_name(name)
    assert overview.locator(".graph-edge").count() == 5
    assert not page.locator("article.run-view").count()
    found = blocking_violations(page)
    assert not found, found
    overview.locator("[data-node='escalate']").click()  # a node leads to its source
    link = overview.locator(".graph-where .source-target a")
    expect(link).to_have_text(re.compile(r"^app/nodes\.py:\d+$"))
    expect(link).to_have_attribute("href", re.compile(
        rf"^vscode://file{re.escape(str(stack.project))}/app/nodes\.py:\d+$"))


def test_a_run_lights_each_node_while_it_runs(scheme_page: Any) -> None:
    page = scheme_page
    button(page, "approve: request").click()
    draft = json.loads(page.get_by_label("Message").input_value())
    draft.update(requestId="r-slow", amount=7, requester={"name": "Ada"}, tags=["slow"])
    view = send(page, json.dumps(draft))
    graph = view.locator(".graph-box .graph")
    approve = graph.locator("[data-node='approve']")
    notify = graph.locator("[data-node='notify']")
    # While approve sleeps (4 s), the run is still going: approve runs, notify waits.
    expect(approve).to_have_attribute("data-state", "running")
    expect(approve.locator(".graph-took")).to_have_text("running")
    expect(approve).to_have_accessible_name("approve: running")
    assert view.get_attribute("data-status") not in ("completed", "failed")
    expect(notify).to_have_attribute("data-state", "idle")
    expect(graph.locator(".graph-edge[data-source='__start__'][data-target='approve']")
           ).to_have_attribute("data-taken", "true")
    found = blocking_violations(page)
    assert not found, found
    # Then each ends as it ends, and the run reaches END.
    expect(approve).to_have_attribute("data-state", "done")
    expect(approve).to_have_accessible_name(re.compile(r"^approve: done, [\d.]+ s$"))
    expect(notify).to_have_attribute("data-state", "done")
    expect(view).to_have_attribute("data-status", "completed")
    expect(graph.locator("[data-node='__end__']")).to_have_attribute("data-state", "done")
    expect(graph.locator("[data-node='escalate']")).to_have_attribute("data-state", "idle")
