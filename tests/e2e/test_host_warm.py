"""Warm starts with real processes: generations forked from the project's warm parent run
the code on disk, a changed dependency brings a fresh parent, the fallbacks start cold and
say why, and the daemon's SIGKILL takes the parent and its generations along."""

from __future__ import annotations

import os
import signal
import stat
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import psutil
import pytest

from llamon_playground.host_manager.capture import ENV_TOKEN
from llamon_playground.host_manager.environment import ENV_MARKER
from llamon_playground.host_manager.orphans import is_our_host, read_record
from tests.support.api import Api
from tests.support.procs import Stack, copy_example, stack_for, wait_for
from tests.support.projects import CHILD, tiny_project
from tests.support.waiting import eventually

ORIGINAL = "The quick brown fox jumps over the lazy dog while echo_agent streams words."


@pytest.fixture
def helper_dir(tmp_path: Path) -> Path:
    """A third-party module outside the project, preloaded by name."""
    folder = tmp_path / "site"
    folder.mkdir()
    (folder / "warm_helper.py").write_text("VALUE = 1\n")
    return folder


@pytest.fixture
def warm_stack(tmp_path: Path, runtime_base: Path, helper_dir: Path) -> Iterator[Stack]:
    project = copy_example(tmp_path)
    pyproject = project / "pyproject.toml"
    pyproject.write_text(pyproject.read_text() + 'preload = ["warm_helper"]\n')
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(helper_dir),
                                                        os.environ.get("PYTHONPATH")]))}
    with stack_for(project, runtime_base, extra_env=env) as s:
        s.start_daemon()
        yield s


@pytest.fixture
async def warm_api(warm_stack: Stack) -> AsyncIterator[Api]:
    client = Api.for_socket(str(warm_stack.settings.socket_path))
    yield client
    await client.close()


async def streamed_text(api: Api, text: str) -> str:
    session = await api.session()
    run_id = await api.start_run(session, text)
    events = await api.events(run_id)
    return "".join(e.data["text"] for e in events if e.event == "output.delta")


async def test_a_warm_generation_answers_with_the_edited_code(warm_stack: Stack,
                                                            warm_api: Api) -> None:
    first = await warm_api.ok("POST", "host/start")
    assert (first["start_mode"], first["start_reason"]) == ("warm", "parent_started")
    parent = first["warm_parent"]["pid"]
    assert psutil.Process(first["pid"]).ppid() == parent
    assert os.getpgid(first["pid"]) == first["pid"] == os.getsid(first["pid"])  # own session
    # The capture token is the generation's alone: not in the parent's environment.
    assert ENV_TOKEN not in psutil.Process(parent).environ()
    # The record a next daemon reaps by names this very process.
    record = read_record(warm_stack.settings.host_record_path)
    assert record is not None
    recorded = is_our_host(record, ENV_MARKER)
    assert recorded is not None and recorded.pid == first["pid"]
    assert await streamed_text(warm_api, "stream") == ORIGINAL

    agent = warm_stack.project / "app" / "agent.py"
    agent.write_text(agent.read_text().replace(ORIGINAL, "Edited on disk, forked warm."))
    second = await warm_api.ok("POST", "host/restart")
    assert (second["start_mode"], second["start_reason"]) == ("warm", "forked")
    assert second["warm_parent"]["pid"] == parent and second["pid"] != first["pid"]
    assert await streamed_text(warm_api, "stream") == "Edited on disk, forked warm."
    logs = await warm_api.ok("GET", "host/logs")
    assert any("echo_agent ready on" in ln["text"] and ln["generation"] == 2
               for ln in logs["lines"])


async def test_a_changed_dependency_brings_a_fresh_parent(warm_stack: Stack, warm_api: Api,
                                                          helper_dir: Path) -> None:
    first = await warm_api.ok("POST", "host/start")
    parent = first["warm_parent"]["pid"]
    assert first["warm_parent"]["preloaded"] >= 1

    pyproject = warm_stack.project / "pyproject.toml"
    st = pyproject.stat()
    os.utime(pyproject, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
    second = await warm_api.ok("POST", "host/restart")
    assert (second["start_mode"], second["start_reason"]) == ("warm", "dependencies_changed")
    assert second["warm_parent"]["pid"] != parent
    # The old parent stays until its generation has stopped on its SIGTERM (the parent's
    # exit would SIGKILL it), then goes.
    stopped = await eventually(lambda: warm_api.ok("GET", "host"),
                               lambda s: s["last_exit_code"] is not None,
                               "the first generation's exit", 15)
    assert stopped["last_exit_code"] == -signal.SIGTERM
    assert stopped["last_stop_step"] == "terminated"
    wait_for(lambda: not _alive(parent), 10, "the old parent gone")

    # A preloaded module's file changes: the same again.
    helper = helper_dir / "warm_helper.py"
    helper.write_text("VALUE = 2  # a new version\n")
    third = await warm_api.ok("POST", "host/restart")
    assert third["start_reason"] == "dependencies_changed"
    assert third["warm_parent"]["pid"] != second["warm_parent"]["pid"]
    # Unchanged: forked from the same parent.
    fourth = await warm_api.ok("POST", "host/restart")
    assert fourth["start_reason"] == "forked"
    assert fourth["warm_parent"]["pid"] == third["warm_parent"]["pid"]
    # Warm starts turned off: cold, and the parent goes once its generation has stopped.
    pyproject.write_text(pyproject.read_text() + "warm_start = false\n")
    fifth = await warm_api.ok("POST", "host/restart")
    assert (fifth["start_mode"], fifth["start_reason"]) == ("cold", "warm_start_disabled")
    assert fifth["warm_parent"] is None
    wait_for(lambda: not _alive(fourth["warm_parent"]["pid"]), 15, "the unused parent gone")


async def test_daemon_sigkill_leaves_no_parent_and_no_host(warm_stack: Stack,
                                                           warm_api: Api) -> None:
    status = await warm_api.ok("POST", "host/start")
    pids = [status["pid"], status["warm_parent"]["pid"]]
    assert warm_stack.daemon is not None
    warm_stack.daemon.signal(signal.SIGKILL)
    warm_stack.daemon.wait(10)
    wait_for(lambda: not any(_alive(pid) for pid in pids), 10,
             "the warm parent and the Host to die with the daemon")


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


@pytest.mark.parametrize(("extra", "command", "reason"), [
    ("warm_start = false\n", None, "warm_start_disabled"),
    ("", [sys.executable, "-u", str(CHILD), "card"], "not_python_entry_point"),
])
async def test_fallbacks_start_cold_and_say_why(tmp_path: Path, runtime_base: Path,
                                                extra: str, command: list[str] | None,
                                                reason: str) -> None:
    project = tiny_project(tmp_path, "card", extra)
    if command is not None:
        text = (project / "pyproject.toml").read_text().splitlines()
        text = [f"host_command = {command!r}".replace("'", '"') if line.startswith(
            "host_command") else line for line in text]
        (project / "pyproject.toml").write_text("\n".join(text) + "\n")
    with stack_for(project, runtime_base) as s:
        s.start_daemon()
        api = Api.for_socket(str(s.settings.socket_path))
        try:
            status = await api.ok("POST", "host/start")
            assert (status["start_mode"], status["start_reason"]) == ("cold", reason)
            assert status["warm_parent"] is None
        finally:
            await api.close()


async def test_a_parent_that_fails_to_start_gives_a_cold_start(tmp_path: Path,
                                                              runtime_base: Path) -> None:
    # A real fault: an interpreter wrapper that refuses to run the preloader (as a broken
    # or foreign interpreter would) but runs the Host itself.
    wrapper = tmp_path / "bin" / "python3"
    wrapper.parent.mkdir()
    wrapper.write_text(f'#!/bin/sh\ncase "$1" in *preloader.py) exit 3;; esac\n'
                       f'exec {sys.executable} "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    project = tiny_project(tmp_path, "card")
    text = (project / "pyproject.toml").read_text().replace(sys.executable, str(wrapper))
    (project / "pyproject.toml").write_text(text)
    with stack_for(project, runtime_base) as s:
        s.start_daemon()
        api = Api.for_socket(str(s.settings.socket_path))
        try:
            status = await api.ok("POST", "host/start")
            assert (status["start_mode"], status["start_reason"]) == \
                ("cold", "warm_parent_failed")
            again = await api.ok("POST", "host/restart")
            assert (again["start_mode"], again["start_reason"]) == \
                ("cold", "warm_parent_failed")
        finally:
            await api.close()
