"""A Host that cannot start says why before any run: a copy of examples/echo_agent whose
agent module raises at import goes into a crashloop; the Host panel opens with the
exception line first and the traceback without the Playground's own preloader and runpy
frames (the full log one click away), and the composer says the Host cannot start instead
of offering examples. A run sent anyway fails with the same exception line on top of its
log tail."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.accessibility import blocking_violations
from tests.browser.conftest import require_browser
from tests.browser.helpers import button, expect, finished
from tests.support.procs import REPO, Stack, short_tmpdir, stack_for

RAISED = "RuntimeError: the config is missing: set ECHO_MODE"
# Crash at once and often: five crashes make a crashloop, the back-offs short.
EXTRA_ENV = {"LLAMON_PLAYGROUND_BACKOFF_BASE": "0.1"}


@pytest.fixture(scope="module")
def page_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Stack, str]]:
    """The echo agent with a module that raises at import (this module's own stack)."""
    require_browser()
    runtime = short_tmpdir("lpf")
    project = Path(shutil.copytree(REPO / "examples" / "echo_agent",
                                   tmp_path_factory.mktemp("failing") / "echo_agent",
                                   ignore=shutil.ignore_patterns(".llamon", "__pycache__")))
    agent = project / "app" / "agent.py"
    source = agent.read_text()
    head = "from __future__ import annotations\n"
    agent.write_text(source.replace(
        head, f'{head}raise RuntimeError("the config is missing: set ECHO_MODE")\n', 1))
    try:
        with stack_for(project, runtime, extra_env=EXTRA_ENV) as stack:
            _, url = stack.start_daemon_and_front()
            yield stack, url
    finally:
        shutil.rmtree(runtime, ignore_errors=True)


def test_a_crashloop_says_why_before_any_run(scheme_page: Any) -> None:
    page = scheme_page
    badge = page.locator("#host-state")
    expect(badge).not_to_have_attribute("data-state", "unknown")
    if badge.get_attribute("data-state") == "stopped":  # the module's first page starts it
        badge.click()
        button(page, "Start Host").click()
    expect(badge).to_have_attribute("data-state", "crashloop")
    reason = page.get_by_role("region", name="Host").get_by_role("region",
                                                                 name="Why the Host stopped")
    expect(reason).to_be_visible()
    expect(reason.locator(".host-exception")).to_have_text(RAISED)
    # The exception comes first, before the facts (pid, crashes, ...).
    assert page.locator("#host-body > *").first.get_attribute("class") == "host-error"
    reason.get_by_text(re.compile(r"^Traceback \(5 frames of the Playground")).click()
    traceback = reason.get_by_role("region", name="Traceback")
    expect(traceback).to_contain_text('app/agent.py", line')
    expect(traceback).to_contain_text(RAISED)
    expect(traceback).not_to_contain_text("preloader.py")
    expect(traceback).not_to_contain_text("runpy")
    hint = page.locator("#composer-examples")
    expect(hint).to_have_attribute("data-state", "host-failing")
    expect(hint).to_contain_text(f"The Host cannot start: {RAISED}.")
    found = blocking_violations(page)
    assert not found, found
    reason.get_by_role("button", name="Full Host log").click()
    logs = page.get_by_role("region", name="Host logs panel")
    expect(logs).to_contain_text("preloader.py")  # the whole output, there
    page.keyboard.press("Escape")


def test_a_failed_run_opens_its_log_tail_with_the_exception(page: Any) -> None:
    view, _ = finished(page, "hello", "failed")
    tail = view.get_by_role("region", name="Host log tail")
    expect(tail).to_be_visible()
    first = (tail.text_content() or "").splitlines()[0]
    assert first == RAISED, first
    expect(tail).not_to_contain_text("preloader.py")
    expect(tail).to_contain_text("frames of the Playground's preloader and runpy left out")
