"""What the browser tests share: finding controls as a person does, sending a message."""

from __future__ import annotations

import re
from typing import Any

try:
    from playwright.sync_api import expect
except ImportError:  # the fixtures skip the tests (or fail them under CI=true) and say why
    expect = None

XSS = '<img src=x onerror="window.__xss=1">'


def button(page: Any, name: str) -> Any:
    """A button by its exact accessible name ("Rerun" is not "Edit and rerun")."""
    return page.get_by_role("button", name=name, exact=True)


def pick_box(page: Any, run_id: str) -> Any:
    """The thread's pick box of run `run_id` (named for a person by its input and time)."""
    return page.locator(f".run-item:has(.run-card[data-run-id='{run_id}']) input[type=checkbox]")


def send(page: Any, text: str) -> Any:
    """Type a message and send it with Ctrl+Enter; answer the run view it opens."""
    views = page.locator("article.run-view")
    before = views.get_attribute("data-run-id") if views.count() else None
    page.get_by_label("Message").fill(text)
    page.get_by_label("Message").press("Control+Enter")
    expect(views).to_have_attribute("data-run-id", _another_run(before))
    return views


def finished(page: Any, text: str, status: str = "completed") -> tuple[Any, str]:
    """Send a message and wait for the run to end in `status`: (the run view, its id)."""
    view = send(page, text)
    expect(view).to_have_attribute("data-status", status)
    return view, view.get_attribute("data-run-id")


def expect_rerun(page: Any, of: str, answer: str) -> Any:
    """The view moved to a completed rerun of run `of` that answered `answer`."""
    rerun = page.locator("article.run-view")
    expect(rerun).not_to_have_attribute("data-run-id", of)
    expect(rerun).to_have_attribute("data-status", "completed")
    expect(rerun.locator(".answer")).to_have_text(answer)
    expect(rerun.locator(".facts")).to_contain_text(f"rerun of {of}")
    return rerun


def _another_run(run_id: str | None) -> re.Pattern[str]:
    if run_id is None:
        return re.compile(r"^run_[0-9a-f]+$")
    return re.compile(rf"^(?!{re.escape(run_id)}$)run_[0-9a-f]+$")


def accept_dialogs(page: Any) -> list[str]:
    """Accept the page's next confirm; the list it answers receives the dialog's text."""
    asked: list[str] = []

    def accept(dialog: Any) -> None:
        asked.append(dialog.message)
        dialog.accept()

    page.once("dialog", accept)
    return asked


def slow_run_streaming(page: Any, tick: int) -> tuple[Any, Any]:
    """Send `slow` and wait until tick `tick` showed: (the run view, its answer)."""
    view = send(page, "slow")
    answer = view.locator(".answer")
    expect(answer).to_contain_text(f"tick {tick} ")
    return view, answer


def ticks_once(text: str) -> int:
    """`slow`'s ticks in `text` are 1, 2, 3, ... (none lost, none twice): how many."""
    # The last tick may end the text without its space (a final Markdown paragraph drops it).
    ticks = [int(n) for n in re.findall(r"tick (\d+)(?: |$)", text)]
    assert ticks == list(range(1, len(ticks) + 1)), text
    return len(ticks)
