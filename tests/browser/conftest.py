"""Browser tests: the real daemon, front and example Host, driven by the system Chromium.

One stack per module and one browser for the whole package (starting Chromium costs about
a second, and it is stopped before any other package's tests run); each test gets a fresh
browser context, so cookies and storage never carry over. The browser is Debian's
`chromium` (never a Playwright download). Without it, or without Playwright, these tests
skip with one line saying how to get them; under `CI=true` they fail instead: CI must run
them.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from llamon_playground.harness.browser import CHROMIUM, CHROMIUM_ARGS, missing_browser
from tests.support.procs import REPO, Stack, short_tmpdir, stack_for

HOW_TO_GET_IT = ("browser tests need Debian's chromium and Playwright for Python: "
                 "`sudo apt-get install chromium` and `scripts/setup`")


def require_browser() -> None:
    why = missing_browser()
    if why is None:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"{why}; CI must run the browser tests ({HOW_TO_GET_IT})")
    pytest.skip(f"{why}: {HOW_TO_GET_IT}")


@pytest.fixture(scope="package")
def browser() -> Iterator[Any]:
    require_browser()
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=20_000)  # a loaded 2-core machine: conditions, not speed

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture(scope="module")
def page_stack(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
               ) -> Iterator[tuple[Stack, str]]:
    """The stack of the module's example project (`EXAMPLE` in the module; echo_agent),
    with the module's `PYPROJECT_EXTRA` lines (if any) added to its `[tool.llamon]` and
    its `EXTRA_ENV` (if any) in the daemon's and the front's environment; `EDIT_PROJECT(path)`
    (if any) changes the copy before it starts."""
    require_browser()
    runtime = short_tmpdir("lpb")
    example = getattr(request.module, "EXAMPLE", "echo_agent")
    project = Path(shutil.copytree(REPO / "examples" / example,
                                   tmp_path_factory.mktemp("browser") / example,
                                   ignore=shutil.ignore_patterns(".llamon", "__pycache__")))
    pyproject = project / "pyproject.toml"
    pyproject.write_text(pyproject.read_text() + getattr(request.module, "PYPROJECT_EXTRA", ""))
    edit = getattr(request.module, "EDIT_PROJECT", None)
    if edit is not None:  # the module's own change to the copy (a test behaviour)
        edit(project)
    try:
        with stack_for(project, runtime, extra_env=getattr(request.module, "EXTRA_ENV", None)) as stack:
            _, url = stack.start_daemon_and_front()
            yield stack, url
    finally:
        shutil.rmtree(runtime, ignore_errors=True)


@pytest.fixture
def front_url(page_stack: tuple[Stack, str]) -> str:
    return page_stack[1]


@pytest.fixture
def page(browser: Any, page_stack: tuple[Stack, str]) -> Iterator[Any]:
    """A page logged in the way a person is: the token URL once, then the cookie."""
    stack, url = page_stack
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    context.set_default_timeout(20_000)
    tab = context.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda exc: errors.append(str(exc)))
    tab.goto(f"{url}/?token={stack.token}")
    yield tab
    context.close()
    assert not errors, errors  # an uncaught exception in the page fails the test


@pytest.fixture(params=["light", "dark"])
def scheme_page(request: pytest.FixtureRequest, browser: Any,
                page_stack: tuple[Stack, str]) -> Iterator[Any]:
    """A logged-in page in a context that lets axe-core in (bypass_csp) and in one scheme,
    once live: the accessibility checks of every view run on it."""
    from tests.browser.helpers import expect  # playwright: imported once a browser is there

    stack, url = page_stack
    context = browser.new_context(viewport={"width": 1280, "height": 720}, bypass_csp=True,
                                  color_scheme=request.param)
    context.set_default_timeout(20_000)
    tab = context.new_page()
    tab.goto(f"{url}/?token={stack.token}")
    expect(tab.locator("#connection")).to_have_attribute("data-state", "live")
    yield tab
    context.close()
