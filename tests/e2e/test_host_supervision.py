"""Host supervision with real processes: stop bounds, exits, crash loops, orphans."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import aiohttp
import orjson
import psutil
import pytest

from tests.support.api import Api
from tests.support.endings import assert_phases_close
from tests.support.procs import (
    Stack,
    ended,
    kill_tree,
    pid_ended,
    stack_for,
    still_running,
    wait_for,
)
from tests.support.projects import tiny_project
from tests.support.waiting import eventually, host_status


@pytest.fixture
def tiny_stack(tmp_path: Path, runtime_base: Path, request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    mode, extra_env = request.param
    project = tiny_project(tmp_path, mode)
    with stack_for(project, runtime_base, extra_env=extra_env) as s:
        s.start_daemon()
        yield s


@pytest.mark.parametrize("tiny_stack", [("stubborn", {})], indirect=True)
async def test_host_ignoring_sigterm_is_killed_while_a_client_holds_a_stream(
        tiny_stack: Stack) -> None:
    api = Api.for_socket(str(tiny_stack.settings.socket_path))
    try:
        status = await api.ok("POST", "host/start")
        assert status["state"] == "ready"
        pid = status["pid"]
        async with aiohttp.ClientSession() as http:
            async with http.get(status["url"] + "/sse") as held:
                assert (await held.content.readline()).startswith(b": ping")
                # Bounded: the grace is 2 s here; the client timeout fails the test if stop hangs.
                code, stopped = await asyncio.wait_for(api.call("POST", "host/stop"), 15)
        assert code == 200 and stopped["state"] == "stopped"
        assert stopped["last_stop_step"] == "killed"
        assert pid_ended(pid)
    finally:
        await api.close()


@pytest.mark.parametrize("tiny_stack", [("grandchild", {"LLAMON_PLAYGROUND_BACKOFF_BASE": "30"})],
                         indirect=True)
async def test_grandchild_holding_stdout_does_not_hide_the_hosts_exit(tiny_stack: Stack) -> None:
    api = Api.for_socket(str(tiny_stack.settings.socket_path))
    try:
        status = await api.ok("POST", "host/start")
        logs = await wait_for_log(api, "grandchild pid")
        grandchild = int(logs.split("grandchild pid ")[1].split()[0])
        assert psutil.pid_exists(grandchild)
        async with aiohttp.ClientSession() as http:
            try:
                async with http.get(status["url"] + "/exit") as resp:
                    await resp.read()
            except aiohttp.ClientError:
                pass  # it may die before answering
        after = await host_status(api, lambda s: s["state"] == "backoff", "backoff")
        assert after["last_exit_code"] == 0 and after["generation"] == status["generation"]
        # The leftover grandchild of the dead Host's group is gone too.
        wait_for(lambda: pid_ended(grandchild), 10, "grandchild reaped")
    finally:
        await api.close()


async def wait_for_log(api: Api, needle: str) -> str:
    doc = await eventually(lambda: api.ok("GET", "host/logs"),
                           lambda d: any(needle in ln["text"] for ln in d["lines"]),
                           f"{needle!r} in the Host log")
    return "\n".join(line["text"] for line in doc["lines"])


CRASHY = {"LLAMON_PLAYGROUND_CRASH_LIMIT": "3", "LLAMON_PLAYGROUND_BACKOFF_BASE": "0.05",
          "LLAMON_PLAYGROUND_WATCH_QUIET": "0.1"}


@pytest.mark.parametrize("tiny_stack", [("crash", CRASHY)], indirect=True)
async def test_crash_loop_backs_off_then_stops_until_an_edit(tiny_stack: Stack) -> None:
    api = Api.for_socket(str(tiny_stack.settings.socket_path))
    try:
        code, doc = await api.call("POST", "host/start")
        assert code == 503 and doc["detail"]["error"] == "runtime_unavailable"
        assert any("crashing on purpose" in line for line in doc["detail"]["log_tail"])
        looped = await host_status(api, lambda s: s["state"] == "crashloop", "crashloop")
        assert looped["generation"] == 3  # three crashes in the window, then no more
        # An edit of a watched file clears the crashloop: the Host is tried again.
        (tiny_stack.project / "app" / "__init__.py").write_text("# edited\n")
        again = await host_status(api, lambda s: (s["generation"] or 0) > 3, "a new start")
        assert again["generation"] >= 4
    finally:
        await api.close()


@pytest.mark.parametrize("tiny_stack", [("never", {"LLAMON_PLAYGROUND_HOST_START_TIMEOUT": "1",
                                                    "LLAMON_PLAYGROUND_CRASH_LIMIT": "1"})],
                         indirect=True)
async def test_host_never_ready_fails_the_run_runtime_unavailable(tiny_stack: Stack) -> None:
    api = Api.for_socket(str(tiny_stack.settings.socket_path))
    try:
        session = await api.session()
        run = await api.wait_status(await api.start_run(session, "hello"))
        assert run["status"] == "failed" and run["reason"] == "runtime_unavailable"
        message = run["error"]["message"]
        assert "did not answer its agent card" in message
        # The port and URL it was given, and the usual cause, are named.
        host = await api.ok("GET", "host")
        assert "LLAMON_HOST_PORT=" in message and "http://127.0.0.1:" in message, message
        assert "ignores LLAMON_HOST_PORT" in message and host["state"] != "ready"
        assert run["recommended_run_command"].endswith("tiny_host.py never")
        assert any("never going to be ready" in line for line in run["error"]["log_tail"])
        events = await api.events(run["id"])
        complete = [e.data for e in events
                    if e.event == "run.phase" and e.data["phase"] == "complete"][-1]
        assert complete["state"] == "failed"
        assert complete["recommended_run_command"] == run["recommended_run_command"]
        # The Host exited before Ready: its start and ready phases close, ready saying why.
        phases = [e.data for e in events if e.event == "run.phase"]
        assert_phases_close(phases)
        ready = [p for p in phases if p["phase"] == "ready" and p["state"] != "started"]
        assert ready[0]["state"] == "failed" and ready[0]["reason"] == "runtime_unavailable"
        assert ready[0]["message"] == run["error"]["message"]
    finally:
        await api.close()


async def test_postgresql_backend_is_warned_from_the_start(tmp_path: Path,
                                                           runtime_base: Path) -> None:
    project = tiny_project(tmp_path, "card", extra='state_backend = "postgresql"\n')
    with stack_for(project, runtime_base) as stack:
        stack.start_daemon()
        api = Api.for_socket(str(stack.settings.socket_path))
        try:
            status = await api.ok("GET", "host")
            assert [w["code"] for w in status["warnings"]] == ["postgresql_backend"]
            session = await api.session()
            run_id = await api.start_run(session, "x")
            events = await api.events(run_id, limit=6)
            warnings = [e.data for e in events if e.event == "diagnostic"]
            assert warnings and warnings[0]["code"] == "postgresql_backend"
            await api.ok("DELETE", f"runs/{run_id}")
        finally:
            await api.close()


@pytest.mark.parametrize("tiny_stack", [("card", {})], indirect=True)
async def test_a_host_any_web_page_can_reach_is_reported(tiny_stack: Stack) -> None:
    # The tiny Host answers its card whatever the Host header says (DNS rebinding).
    api = Api.for_socket(str(tiny_stack.settings.socket_path))
    try:
        status = await api.ok("POST", "host/start")
        exposed = [w for w in status["warnings"] if w["code"] == "host_exposed"]
        assert exposed and "foreign host name" in exposed[0]["message"]
        assert "LoopbackGuard" in exposed[0]["fix"]
        assert tiny_stack.daemon is not None
        assert "is reachable by any web page" in tiny_stack.daemon.output()
        session = await api.session()
        run_id = await api.start_run(session, "x")
        diagnostics = [e.data for e in await api.events(run_id)  # read until the run ends
                       if e.event == "diagnostic" and e.data["code"] == "host_exposed"]
        assert diagnostics and diagnostics[0]["fix"] == exposed[0]["fix"]
    finally:
        await api.close()


async def test_the_guarded_example_host_is_not_reported(api: Api) -> None:
    status = await api.ok("POST", "host/start")
    assert status["state"] == "ready" and status["warnings"] == []


def test_stale_record_of_an_unrelated_process_is_left_alone(stack: Stack) -> None:
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                                 start_new_session=True)
    try:
        stack.settings.runtime_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        proc = psutil.Process(bystander.pid)
        stack.settings.host_record_path.write_bytes(orjson.dumps({
            "pid": bystander.pid, "create_time": proc.create_time(), "marker": "1:1"}))
        stack.start_daemon()
        assert bystander.poll() is None, "a pid from a stale file was signalled"
    finally:
        bystander.kill()
        bystander.wait(10)


def test_orphan_host_of_a_dead_daemon_is_stopped_on_boot(stack: Stack) -> None:
    env = {**os.environ, "LLAMON_PLAYGROUND_HOST": "4242:7"}
    orphan = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], env=env,
                              start_new_session=True)
    try:
        stack.settings.runtime_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        proc = psutil.Process(orphan.pid)
        stack.settings.host_record_path.write_bytes(orjson.dumps({
            "pid": orphan.pid, "create_time": proc.create_time(), "marker": "4242:7"}))
        stack.start_daemon()
        assert orphan.wait(10) == -signal.SIGKILL
    finally:
        if orphan.poll() is None:
            orphan.kill()
            orphan.wait(10)


def through_a_shell(project: Path, script: str) -> Path:
    """The example's Host started the way `uv run` starts one: a shell runs it as a
    grandchild (PDEATHSIG and the process group do not reach it)."""
    pyproject = project / "pyproject.toml"
    command = orjson.dumps(["/bin/sh", "-c", script.format(python=sys.executable)]).decode()
    pyproject.write_text(pyproject.read_text().replace(
        'host_command = ["{python}", "-m", "app.host"]', f"host_command = {command}"))
    return project


def real_host(shell_pid: int) -> psutil.Process:
    """The Python Host under the shell."""
    return wait_for(lambda: next((p for p in psutil.Process(shell_pid).children(recursive=True)
                                  if "app.host" in " ".join(p.cmdline())), None),
                    10, "the Host under its shell")


REAPER_DEADLINE = 2.0  # the reaper ends the tree this soon after the daemon dies


@pytest.mark.parametrize("script", [
    # The Host as a shell's grandchild: the shell dies with the daemon (PDEATHSIG), the
    # Host, in the same group, would not.
    "{python} -m app.host; true",
    # The Host in a session of its own, and a sleeper left in the shell's group.
    "setsid {python} -m app.host & {python} -c 'import time; time.sleep(300)' & wait",
    # The example as it is: a generation forked from the warm parent.
    None,
], ids=["same-group", "setsid", "warm"])
async def test_the_host_tree_dies_with_a_killed_daemon_and_no_new_one(
        project: Path, runtime_base: Path, script: str | None) -> None:
    if script is not None:
        through_a_shell(project, script)
    with stack_for(project, runtime_base) as s:
        s.start_daemon()
        api = Api.for_socket(str(s.settings.socket_path))
        try:
            pid = (await api.ok("POST", "host/start"))["pid"]
            host = real_host(pid) if script is not None else psutil.Process(pid)
        finally:
            await api.close()
        assert s.daemon is not None
        tree = [p for p in s.daemon.descendants() if "reaper" not in " ".join(p.cmdline())]
        assert host in tree and len(tree) >= 2
        try:
            s.daemon.signal(signal.SIGKILL)
            s.daemon.wait(10)
            wait_for(lambda: all(ended(p) for p in tree), REAPER_DEADLINE,
                     "every process of the Host tree gone with no daemon")
            assert not _answers(s.settings.socket_path), "no daemon came back: the reaper alone"
        finally:
            kill_tree(tree, grace=0)  # only if the reaper failed


def _answers(path: Path) -> bool:
    with socket.socket(socket.AF_UNIX) as sock:
        try:
            sock.connect(str(path))
        except OSError:
            return False
    return True


async def test_a_host_in_its_own_session_dies_with_stop(project: Path,
                                                       runtime_base: Path) -> None:
    script = "setsid {python} -m app.host & wait"
    with stack_for(through_a_shell(project, script), runtime_base) as s:
        s.start_daemon()
        api = Api.for_socket(str(s.settings.socket_path))
        try:
            shell = (await api.ok("POST", "host/start"))["pid"]
            host = real_host(shell)
            assert os.getsid(host.pid) != os.getsid(shell)
            await api.ok("POST", "host/stop")
            assert not still_running([host], 10), "stop ended the Host that left the group"
            status = await api.ok("GET", "host")
            assert status["state"] == "stopped"
            assert (host.pid, "stop") in [(r["pid"], r["when"]) for r in status["reaped"]]
        finally:
            await api.close()
