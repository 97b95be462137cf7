"""A snippet copied once keeps working: the Host serves on one address for the project's
life, across a save, an outside edit, a crash and a daemon restart; and that address still
refuses what a web page sends."""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_introspect_snippets import needs_curl, run_curl, run_python, streamed_text
from tests.support.api import Api
from tests.support.procs import Stack, stack_for
from tests.support.waiting import host_status

ENV = {"LLAMON_PLAYGROUND_WATCH_QUIET": "0.15"}


@pytest.fixture
def watched(project: Path, runtime_base: Path) -> Iterator[Stack]:
    with stack_for(project, runtime_base, extra_env=ENV) as s:
        s.start_daemon()
        yield s


def edit(path: Path, note: str) -> None:
    path.write_text(path.read_text() + f"\n# {note}\n")


def web_page_refused(url: str) -> bool:
    """A cross-site text/plain POST, as any web page can send without asking."""
    request = urllib.request.Request(url, data=b"{}", method="POST", headers={
        "Origin": "http://evil.example", "Content-Type": "text/plain"})
    try:
        with urllib.request.urlopen(request, timeout=10) as resp:
            return bool(resp.status >= 400)
    except urllib.error.HTTPError as exc:
        return exc.code >= 400


async def ready_after(api: Api, generation: int) -> dict[str, Any]:
    return await host_status(api, lambda s: s["state"] == "ready"
                             and (s["generation"] or 0) > generation, "a new Ready generation")


@needs_curl
async def test_a_copied_snippet_survives_save_edit_crash_and_daemon_restart(
        watched: Stack, tmp_path: Path) -> None:
    api = Api.for_socket(str(watched.settings.socket_path))
    try:
        session = await api.session()
        run = await api.wait_status(await api.start_run(session, "stream kept words"))
        assert run["status"] == "completed", run
        snippets = await api.ok("GET", f"runs/{run['id']}/snippets")
        host = await api.ok("GET", "host")
        address = host["a2a_url"]
        assert host["url"] == address and snippets["host_url"].startswith(address)

        def still_works(step: str) -> None:
            for found in (run_curl(snippets["curl"]), run_python(snippets["python"], tmp_path)):
                assert streamed_text(found) == "kept words", step
            assert web_page_refused(snippets["host_url"]), step

        still_works("copied")
        # A save through the Playground: the run restarts the Host first.
        gen = host["generation"]
        edit(watched.project / "app" / "agent.py", "saved")
        saved = await api.wait_status(await api.start_run(
            session, "stream after save", changed_files=["app/agent.py"]))
        assert saved["status"] == "completed" and saved["generation"] == gen + 1
        still_works("save")
        # An outside edit: the watcher restarts it.
        edit(watched.project / "app" / "agent.py", "outside edit")
        host = await ready_after(api, gen + 1)
        still_works("outside edit")
        # A crash mid-run: restarted at once.
        crashed = await api.wait_status(await api.start_run(session, "crash"))
        assert crashed["status"] == "failed", crashed
        host = await ready_after(api, host["generation"])
        still_works("crash")
        # The daemon restarts: its first generation takes the port it recorded.
        await api.close()
        watched.start_daemon()
        api = Api.for_socket(str(watched.settings.socket_path))
        host = await api.ok("POST", "host/start")
        assert host["a2a_url"] == host["url"] == address
        still_works("daemon restart")
    finally:
        await api.close()
