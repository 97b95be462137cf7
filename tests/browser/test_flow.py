"""The page on a Flow (examples/flow_project): the composer's contract tabs with their JSON
drafts, required fields and the start node's source target, sent as a data part."""

from __future__ import annotations

import json
import re
from typing import Any

from tests.browser.helpers import button, expect, send

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
