"""Screenshots of the Playground page (scripts/screenshots): the first-entry notice, the
thread, the narrow panels, the run view, its trace timeline, a failed run, the Host logs
panel, a comparison, a thread with Markdown answers,
search, the suites, a suite run's report, suite files and a report of repetitions (group
`suites`), a Flow's graph with a run's path, a Flow opened
(its graph before any run), the Flow graph live (a slow node running) and a crashloop's Host
panel, each in light and dark, at 1280x720 (and 800x700), into docs/screenshots/.
`scripts/screenshots page flow crashloop suites` takes only the named groups (default: all).

The pictures show nothing of the machine they were taken on: everything runs in a temporary
folder, and the failed run is one the agent fails itself with a message of its own
(`refuse`), so its diagnostics hold that message and the Host's own log lines. (`fail`
raises inside the agent: the SDK logs a traceback full of this machine's site-packages
paths, which is right for a developer's Host log and wrong for a picture in the README.)"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from playwright.sync_api import expect, sync_playwright

from llamon_playground.harness.browser import CHROMIUM, CHROMIUM_ARGS

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "docs" / "screenshots"
API = "/api/playground/v1"


def start_up(workdir: Path, example: str = "echo_agent", name: str | None = None,
             edit: Callable[[Path], None] | None = None) -> tuple[subprocess.Popen[str], str]:
    """`up` on a copy of `example` (in `workdir/name`, changed by `edit` first)."""
    name = name or example
    project = workdir / name
    shutil.copytree(REPO / "examples" / example, project,
                    ignore=shutil.ignore_patterns(".llamon", "__pycache__"))
    if edit is not None:
        edit(project)
    env = {**os.environ, "LLAMON_PLAYGROUND_RUNTIME_DIR": str(workdir / f"run-{name}")}
    up = subprocess.Popen([str(REPO / ".venv" / "bin" / "llamon-playground"), "up", str(project),
                           "--port", "0"], env=env, stdout=subprocess.PIPE, text=True)
    assert up.stdout is not None
    for line in up.stdout:
        if line.startswith("open in a browser: "):
            return up, line.split(": ", 1)[1].strip()
    raise SystemExit(f"`up` ended without a URL (exit {up.wait()})")


def api(url: str, token: str, method: str, path: str, body: Any = None) -> Any:
    request = urllib.request.Request(f"{url}{API}{path}", method=method,
                                     data=None if body is None else json.dumps(body).encode(),
                                     headers={"Authorization": f"Bearer {token}",
                                              "Content-Type": "application/json"})
    with urllib.request.urlopen(request) as response:
        return json.loads(response.read() or b"null")


def finished(url: str, token: str, run_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        run = api(url, token, "GET", f"/runs/{run_id}")
        if run["status"] not in ("queued", "preparing", "running"):
            return dict(run)
        time.sleep(0.1)  # a script's poll, not a test's synchronisation
    raise SystemExit(f"{run_id} did not finish")


def history(url: str, token: str) -> dict[str, str]:
    """A small history to look at: two comparable runs, a labelled one, a failed one."""
    session = api(url, token, "POST", "/sessions", {"title": "tour of the page"})["id"]
    runs: dict[str, str] = {}
    for name, text in (("left", "stream hello from the Playground page"),
                       ("right", "stream hello from the page, edited"),
                       ("failed", "refuse the request names no account")):
        run_id = api(url, token, "POST", f"/sessions/{session}/runs",
                     {"parts": [{"kind": "text", "text": text}]})["run_id"]
        finished(url, token, run_id)
        runs[name] = run_id
    api(url, token, "PATCH", f"/runs/{runs['right']}", {"label": "edited wording"})
    # A question and its answer (a resume), and an edited rerun: the thread's other turns.
    asked = api(url, token, "POST", f"/sessions/{session}/runs",
                {"parts": [{"kind": "text", "text": "ask"}]})["run_id"]
    finished(url, token, asked)
    runs["resume"] = api(url, token, "POST", f"/runs/{asked}/resume",
                         {"parts": [{"kind": "text", "text": "Ada"}]})["run_id"]
    finished(url, token, runs["resume"])
    runs["rerun"] = api(url, token, "POST", f"/runs/{runs['left']}/rerun",
                        {"parts": [{"kind": "text", "text": "stream hello again, reworded"}]})["run_id"]
    finished(url, token, runs["rerun"])
    # Another session, for search to find words across sessions.
    other = api(url, token, "POST", "/sessions", {"title": "release notes"})["id"]
    runs["other"] = api(url, token, "POST", f"/sessions/{other}/runs",
                        {"parts": [{"kind": "text", "text": "stream hello to the release notes reader"}]})["run_id"]
    finished(url, token, runs["other"])
    api(url, token, "POST", "/suites", {"name": "tour of the page", "cases": [
        {"run_id": runs[name]} for name in ("left", "right", "failed", "resume", "rerun")]})
    return runs


def shoot(browser: Any, login: str, url: str, runs: dict[str, str], scheme: str) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 720}, color_scheme=scheme)
    page = context.new_page()
    page.goto(login)
    welcome = page.get_by_role("region", name="About this Playground")
    expect(welcome).to_be_visible()
    page.screenshot(path=OUT / f"welcome-{scheme}.png")
    page.get_by_role("button", name="Got it").click()
    page.goto(f"{url}/#{runs['rerun']}")
    view = page.locator("article.run-view")
    expect(view).to_have_attribute("data-status", "completed")
    expect(page.locator(".run-card")).to_have_count(6)
    page.screenshot(path=OUT / f"thread-{scheme}.png")
    page.set_viewport_size({"width": 800, "height": 700})
    page.get_by_role("group", name="Panels").get_by_role("button", name="Thread").click()
    page.screenshot(path=OUT / f"narrow-{scheme}.png")
    page.get_by_role("group", name="Panels").get_by_role("button", name="Run").click()
    page.screenshot(path=OUT / f"narrow-run-{scheme}.png")
    page.set_viewport_size({"width": 1280, "height": 720})
    page.goto(f"{url}/#{runs['right']}")
    expect(view).to_have_attribute("data-status", "completed")
    view.get_by_text("Trace and scores").click()
    page.screenshot(path=OUT / f"run-{scheme}.png")
    timeline = view.get_by_role("region", name="Trace")
    timeline.locator(".bar").first.focus()  # its times show as text below the timeline
    expect(timeline.locator(".timeline-detail")).to_contain_text("ended +")
    timeline.scroll_into_view_if_needed()
    page.screenshot(path=OUT / f"trace-{scheme}.png")
    page.goto(f"{url}/#{runs['failed']}")
    expect(view).to_have_attribute("data-status", "failed")
    expect(view.get_by_role("region", name="Diagnostics")).to_contain_text("Host log tail")
    page.screenshot(path=OUT / f"failed-{scheme}.png")
    # The Host's own log lines, followed live in the panel under the run.
    page.get_by_role("button", name="Host logs", exact=True).first.click()  # the header's
    expect(page.get_by_role("log", name="Host log lines").locator(".log").first).to_be_visible()
    page.screenshot(path=OUT / f"logs-{scheme}.png")
    page.set_viewport_size({"width": 800, "height": 700})
    page.screenshot(path=OUT / f"logs-narrow-{scheme}.png")
    page.set_viewport_size({"width": 1280, "height": 720})
    page.get_by_role("button", name="Close logs", exact=True).click()
    boxes = page.locator(".run-item input[type=checkbox]")
    boxes.nth(1).check()  # the two comparable runs: the thread's first two turns
    boxes.nth(0).check()
    page.get_by_role("button", name="Compare", exact=True).click()
    expect(page.locator("pre.diff")).to_be_visible()
    page.screenshot(path=OUT / f"compare-{scheme}.png")
    # Search: words over every session, the matched words marked; a hit opened.
    page.get_by_role("searchbox", name="Search runs").fill("hello")
    hits = page.locator("#search-results .hit")
    expect(hits.first.locator("mark")).to_be_visible()
    hits.and_(page.locator(f"[data-run-id='{runs['other']}']")).click()
    expect(view).to_have_attribute("data-run-id", runs["other"])
    page.screenshot(path=OUT / f"search-{scheme}.png")
    page.set_viewport_size({"width": 800, "height": 700})
    page.get_by_role("group", name="Panels").get_by_role("button", name="Sessions").click()
    page.screenshot(path=OUT / f"search-narrow-{scheme}.png")
    page.set_viewport_size({"width": 1280, "height": 720})
    page.get_by_role("searchbox", name="Search runs").press("Escape")
    # A suite of the tour's runs, run against the code on disk: its report.
    page.get_by_role("button", name="Suites", exact=True).click()
    expect(page.get_by_role("article", name="Suites")).to_be_visible()
    page.screenshot(path=OUT / f"suites-{scheme}.png")
    page.set_viewport_size({"width": 800, "height": 700})
    page.screenshot(path=OUT / f"suites-narrow-{scheme}.png")
    page.set_viewport_size({"width": 1280, "height": 720})
    page.get_by_role("button", name="Run tour of the page", exact=True).click()
    report = page.get_by_role("article", name="Suite report")
    expect(report).to_have_attribute("data-status", "completed")
    page.screenshot(path=OUT / f"suite-{scheme}.png")
    page.set_viewport_size({"width": 800, "height": 700})
    page.screenshot(path=OUT / f"suite-narrow-{scheme}.png")
    context.close()


def shoot_graph(browser: Any, login: str, scheme: str) -> None:
    """A Flow run's graph with the path it took, and its trace below."""
    context = browser.new_context(viewport={"width": 1280, "height": 720}, color_scheme=scheme)
    page = context.new_page()
    page.goto(login)
    page.get_by_role("button", name="Got it").click()
    page.get_by_role("button", name="approve: request").click()
    draft = json.loads(page.get_by_label("Message").input_value())
    draft.update(requestId="r-1", amount=12.5, requester={"name": "Ada"})
    page.get_by_label("Message").fill(json.dumps(draft))
    page.get_by_role("button", name="Send", exact=True).click()
    view = page.locator("article.run-view")
    expect(view).to_have_attribute("data-status", "completed")
    expect(view.locator(".graph-edge[data-taken]")).to_have_count(3)
    view.get_by_role("group", name="Graph").scroll_into_view_if_needed()
    page.screenshot(path=OUT / f"graph-{scheme}.png")
    context.close()


def markdown_history(url: str, token: str) -> dict[str, str]:
    """A session whose answers are Markdown: a list, a table, a code block and a link; then a
    question answered from the composer."""
    session = api(url, token, "POST", "/sessions", {"title": "release checklist"})["id"]
    runs: dict[str, str] = {}
    runs["markdown"] = api(url, token, "POST", f"/sessions/{session}/runs",
                           {"parts": [{"kind": "text", "text": "markdown"}]})["run_id"]
    finished(url, token, runs["markdown"])
    runs["ask"] = api(url, token, "POST", f"/sessions/{session}/runs",
                      {"parts": [{"kind": "text", "text": "ask"}]})["run_id"]
    finished(url, token, runs["ask"])
    return runs


def shoot_markdown(browser: Any, login: str, url: str, runs: dict[str, str], scheme: str) -> None:
    """The thread with a Markdown answer (folded, "Show all"), the composer answering the
    agent's question; at 1280 and at 800 px (the Thread panel, then the Run panel)."""
    context = browser.new_context(viewport={"width": 1280, "height": 720}, color_scheme=scheme)
    page = context.new_page()
    page.goto(login)
    page.get_by_role("button", name="Got it").click()
    page.goto(f"{url}/#{runs['markdown']}")
    view = page.locator("article.run-view")
    expect(view.locator(".answer .md-code")).to_be_visible()
    # The thread at its end: the Markdown turn folded above the question still waiting.
    expect(page.locator(f".run-card[data-run-id='{runs['ask']}'] .waiting")).to_be_visible()
    expect(page.locator("#composer-mode")).to_contain_text("The agent asks")
    page.get_by_label("Message").fill("Ada")
    page.locator("#run-list").evaluate("l => { l.scrollTop = l.scrollHeight; }")
    page.screenshot(path=OUT / f"markdown-{scheme}.png")
    page.set_viewport_size({"width": 800, "height": 700})
    page.get_by_role("group", name="Panels").get_by_role("button", name="Thread").click()
    page.screenshot(path=OUT / f"markdown-narrow-{scheme}.png")
    page.get_by_role("group", name="Panels").get_by_role("button", name="Run").click()
    page.screenshot(path=OUT / f"markdown-narrow-run-{scheme}.png")
    context.close()


def send_slow(page: Any) -> Any:
    """Send an approval tagged "slow" (approve takes 4 s); the run view once approve runs."""
    page.get_by_role("button", name="approve: request").click()
    draft = json.loads(page.get_by_label("Message").input_value())
    draft.update(requestId="r-7", amount=640, requester={"name": "Ada"}, tags=["slow"])
    page.get_by_label("Message").fill(json.dumps(draft))
    page.get_by_role("button", name="Send", exact=True).click()
    view = page.locator("article.run-view")
    expect(view.locator(".graph [data-node='approve']")).to_have_attribute("data-state", "running")
    view.locator(".graph-box").scroll_into_view_if_needed()
    return view


def shoot_flow_open(browser: Any, login: str, scheme: str) -> None:
    """A Flow opened: its graph before any run (no Host started yet)."""
    context = browser.new_context(viewport={"width": 1280, "height": 720}, color_scheme=scheme)
    page = context.new_page()
    page.goto(login)
    page.get_by_role("button", name="Got it").click()
    expect(page.locator(".graph-overview .graph-node")).to_have_count(5)
    page.screenshot(path=OUT / f"flow-open-{scheme}.png")
    context.close()


def shoot_flow_live(browser: Any, login: str, scheme: str) -> None:
    """The Flow's graph lit live while its slow node runs, wide and narrow."""
    context = browser.new_context(viewport={"width": 1280, "height": 720}, color_scheme=scheme)
    page = context.new_page()
    page.goto(login)
    page.get_by_role("button", name="Got it").click()
    view = send_slow(page)
    page.screenshot(path=OUT / f"graph-live-{scheme}.png")
    expect(view).to_have_attribute("data-status", "completed")
    page.set_viewport_size({"width": 800, "height": 700})
    page.get_by_role("button", name="Thread", exact=True).click()
    send_slow(page)
    page.screenshot(path=OUT / f"graph-live-narrow-{scheme}.png")
    expect(page.locator("article.run-view")).to_have_attribute("data-status", "completed")
    context.close()


def raise_at_import(project: Path) -> None:
    """The echo agent's module raises at import: the Host cannot start."""
    agent = project / "app" / "agent.py"
    head = "from __future__ import annotations\n"
    agent.write_text(agent.read_text().replace(
        head, f'{head}raise RuntimeError("the config is missing: set ECHO_MODE")\n', 1))


def shoot_crashloop(browser: Any, login: str, scheme: str) -> None:
    """A crashloop's Host panel before any run: the exception first, then the traceback."""
    context = browser.new_context(viewport={"width": 1280, "height": 720}, color_scheme=scheme)
    page = context.new_page()
    page.goto(login)
    page.get_by_role("button", name="Got it").click()
    expect(page.locator("#host-state")).to_have_attribute("data-state", "crashloop")
    reason = page.get_by_role("region", name="Why the Host stopped")
    reason.locator(".host-traceback summary").click()
    expect(reason.get_by_role("region", name="Traceback")).to_be_visible()
    page.screenshot(path=OUT / f"crashloop-{scheme}.png")
    page.set_viewport_size({"width": 800, "height": 700})
    page.screenshot(path=OUT / f"crashloop-narrow-{scheme}.png")
    context.close()


# A test Host behaviour whose answer is random (`dice`), for a case its repetitions disagree on.
DICE = ('            elif command == "dice":\n'
        '                await self._stream_text(updater, os.urandom(8).hex())\n'
        '                await updater.complete()\n'
        '            elif command == "tokens":')


def file_case(text: str, answer: str) -> dict[str, Any]:
    return {"baseline": {"output": [{"kind": "text", "text": answer}], "reason": None,
                         "scores": [], "status": "completed"},
            "kind": "run", "turns": [{"metadata": {}, "parts": [{"kind": "text", "text": text}],
                                      "resume": False}]}


def suite_files(project: Path) -> None:
    """The dice behaviour, a suite file run three times (a case the same, one flaky, one
    whose file baseline no longer matches), and a file with a syntax error."""
    agent = project / "app" / "agent.py"
    agent.write_text(agent.read_text().replace('            elif command == "tokens":', DICE))
    folder = project / "playground" / "suites"
    folder.mkdir(parents=True)
    doc = {"cases": [file_case("say these words back", "say these words back"),
                     file_case("dice", "0123456789abcdef"),
                     file_case("stream hello there", "hello world")],
           "format": "llamon-playground-suite/1", "name": "smoke", "repeat": 3,
           "run_on_save": False}
    (folder / "smoke.json").write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    (folder / "draft.json").write_text('{\n  "name": "draft",\n  "cases": [,]\n}\n')


def shoot_suite_files(browser: Any, login: str, scheme: str) -> None:
    """The Suites view with a file suite (its path) and a file that could not be read; the
    report of its three repetitions a case: same, flaky, changed; at 1280 and 800 px."""
    context = browser.new_context(viewport={"width": 1280, "height": 720}, color_scheme=scheme)
    page = context.new_page()
    page.goto(login)
    page.get_by_role("button", name="Got it").click()
    page.get_by_role("button", name="Suites", exact=True).click()
    suites = page.get_by_role("article", name="Suites")
    expect(suites.locator(".suite-file")).to_have_text("playground/suites/smoke.json")
    page.screenshot(path=OUT / f"suite-files-{scheme}.png")
    page.set_viewport_size({"width": 800, "height": 700})
    page.screenshot(path=OUT / f"suite-files-narrow-{scheme}.png")
    page.set_viewport_size({"width": 1280, "height": 720})
    suites.get_by_role("button", name="Run smoke", exact=True).click()
    report = page.get_by_role("article", name="Suite report")
    expect(report).to_have_attribute("data-status", "completed")
    page.screenshot(path=OUT / f"suite-repeat-{scheme}.png")
    page.set_viewport_size({"width": 800, "height": 700})
    page.screenshot(path=OUT / f"suite-repeat-narrow-{scheme}.png")
    context.close()


def with_up(browser: Any, workdir: Path, example: str, *shots: Callable[..., None],
            name: str | None = None, edit: Callable[[Path], None] | None = None,
            start_host: bool = False) -> None:
    """`up` on a copy of `example`, each of `shots(browser, login, scheme)` light and dark
    (in that order), then stopped."""
    up, login = start_up(workdir, example, name, edit)
    try:
        if start_host:  # it cannot start: 503, and on to the crashloop
            url, token = login.split("/?token=")
            try:
                api(url, token, "POST", "/host/start", {})
            except urllib.error.HTTPError as exc:
                exc.close()
        for shot in shots:
            for scheme in ("light", "dark"):
                shot(browser, login, scheme)
    finally:
        up.send_signal(signal.SIGINT)  # `up` stops the daemon it started, Host included
        up.wait(30)


def main() -> None:
    groups = set(sys.argv[1:]) or {"page", "flow", "crashloop", "suites"}
    expect.set_options(timeout=30_000)  # a Host's first start on a busy machine, not speed
    OUT.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix="lpshots", dir="/tmp"))
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            if "page" in groups:
                up, login = start_up(workdir)
                try:
                    url, token = login.split("/?token=")
                    runs = history(url, token)
                    markdown_runs = markdown_history(url, token)
                    for scheme in ("light", "dark"):
                        shoot(browser, login, url, runs, scheme)
                        shoot_markdown(browser, login, url, markdown_runs, scheme)
                finally:
                    up.send_signal(signal.SIGINT)
                    up.wait(30)
            if "flow" in groups:
                with_up(browser, workdir, "flow_project", shoot_graph)
                (workdir / "live").mkdir()
                with_up(browser, workdir / "live", "flow_project", shoot_flow_open,
                        shoot_flow_live)
            if "suites" in groups:
                with_up(browser, workdir, "echo_agent", shoot_suite_files, name="suites",
                        edit=suite_files)
            if "crashloop" in groups:
                with_up(browser, workdir, "echo_agent", shoot_crashloop, name="crashloop",
                        edit=raise_at_import, start_host=True)
            browser.close()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print("\n".join(str(p.relative_to(REPO)) for p in sorted(OUT.glob("*.png"))), file=sys.stderr)


if __name__ == "__main__":
    main()
