"""Messages a Host author understands: each failure names its cause and its fix, with real
daemons and real (misbehaving) Host processes."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.e2e.data_support import serving
from tests.support.api import Api
from tests.support.door import cli
from tests.support.procs import Proc, Stack, stack_for, wait_for
from tests.support.projects import tiny_project


@pytest.fixture
async def served(tmp_path: Path,
                 request: pytest.FixtureRequest) -> AsyncIterator[tuple[Stack, Api]]:
    async with serving(request.param(tmp_path)) as both:
        yield both


def no_llamon_table(root: Path) -> Path:
    project = root / "plain"
    project.mkdir()
    (project / "pyproject.toml").write_text('[project]\nname = "plain"\nversion = "0"\n')
    return project


def missing_command(root: Path) -> Path:
    project = root / "missing"
    project.mkdir()
    (project / "pyproject.toml").write_text(
        '[project]\nname = "m"\nversion = "0"\n\n[tool.llamon]\n'
        'host_command = ["no-such-host-binary", "serve"]\n')
    return project


@pytest.mark.parametrize("served", [no_llamon_table], indirect=True)
async def test_a_project_without_a_llamon_table_names_host_command(
        served: tuple[Stack, Api]) -> None:
    # `uv` (the default command's executable) is not on the test machine's PATH.
    _, api = served
    run = await api.wait_status(await api.start_run(await api.session(), "hi"))
    assert (run["status"], run["reason"]) == ("failed", "project_validation")
    message = run["error"]["message"]
    assert "has no [tool.llamon] table" in message and "uv run llamon run ." in message
    assert "'uv' was not found" in message and "host_command" in message
    assert "Errno" not in message
    # A standing Host warning too, and a diagnostic of the run's validate phase.
    host = await api.ok("GET", "host")
    assert [w["code"] for w in host["warnings"]] == ["default_host_command"]
    events = await api.events(run["id"])
    assert any(e.event == "diagnostic" and e.data["code"] == "default_host_command"
               for e in events)


@pytest.mark.parametrize("served", [missing_command], indirect=True)
async def test_a_missing_host_executable_is_named_with_its_fix(
        served: tuple[Stack, Api]) -> None:
    _, api = served
    run = await api.wait_status(await api.start_run(await api.session(), "hi"))
    assert (run["status"], run["reason"]) == ("failed", "project_validation")
    message = run["error"]["message"]
    assert "'no-such-host-binary' was not found (not on PATH)" in message
    assert "set [tool.llamon].host_command" in message and "no [tool.llamon]" not in message


@pytest.mark.parametrize("served", [lambda root: tiny_project(root, "elsewhere")],
                         indirect=True)
async def test_a_card_advertising_another_address_says_so(served: tuple[Stack, Api]) -> None:
    _, api = served
    run = await api.wait_status(await api.start_run(await api.session(), "hi"))
    assert (run["status"], run["reason"]) == ("failed", "stream_broken")
    message = run["error"]["message"]
    assert "The address http://127.0.0.1:1 came from the Host's agent card" in message
    assert "LLAMON_HOST_URL" in message


async def test_a_task_the_host_fails_carries_the_hosts_own_reason(api: Api) -> None:
    run = await api.wait_status(await api.start_run(await api.session(),
                                                     "refuse the report is not ready"))
    assert (run["status"], run["reason"]) == ("failed", "host_error")
    assert run["error"]["message"] == "the Host ended the task failed: the report is not ready"


def test_up_warns_at_start_about_the_host_command(tmp_path: Path, runtime_base: Path) -> None:
    with stack_for(missing_command(tmp_path), runtime_base) as stack:
        up = Proc([sys.executable, "-m", "llamon_playground", "up", str(stack.project),
                   "--port", "0"], stack.env, runtime_base / "up.log", stack.project)
        try:
            wait_for(lambda: "front: http" in up.output(), 30, "the front of `up`")
            assert "warning: the Host command's executable 'no-such-host-binary'" in \
                up.output()
        finally:
            up.stop()
            cli(stack, "stop", str(stack.project))
