"""The CLI as a person runs it: up, status, daemon, front."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys

import aiohttp
import orjson
import psutil

from tests.support.api import Api
from tests.support.procs import REPO, Proc, Stack, kill_tree, pid_ended, process_tree, wait_for


def cli(stack: Stack, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "llamon_playground", *args], env=stack.env,
                          cwd=REPO, capture_output=True, text=True, timeout=60, check=False)


def test_status_without_daemon_exits_3(stack: Stack) -> None:
    result = cli(stack, "status", str(stack.project), "--json")
    assert result.returncode == 3
    assert orjson.loads(result.stdout)["status"] == "not_running"


def test_second_daemon_for_the_same_project_exits_4(daemon: Stack) -> None:
    result = cli(daemon, "daemon", str(daemon.project))
    assert result.returncode == 4 and "already serves" in result.stderr


def test_front_refuses_a_non_loopback_bind(stack: Stack) -> None:
    for host in ("0.0.0.0", "192.168.1.10", "example.com"):
        result = cli(stack, "front", str(stack.project), "--host", host, "--port", "0")
        assert result.returncode == 2 and "loopback" in result.stderr


def up_proc(stack: Stack, log: str, *args: str) -> Proc:
    return Proc([sys.executable, "-m", "llamon_playground", "up", str(stack.project),
                 "--port", "0", *args], stack.env, stack.runtime_base / log, REPO)


def up_until_ctrl_c(stack: Stack, log: str, *args: str) -> str:
    """Run `up` until its front serves, then Ctrl-C it; its output."""
    up = up_proc(stack, log, *args)
    try:
        wait_for(lambda: "front: http" in up.output(), 30, "the front of `up`")
        up.signal(2)
        assert up.wait(30) == 0
        return up.output()
    finally:
        up.stop()


async def test_up_serves_the_front_and_stops_the_daemon_it_started(stack: Stack) -> None:
    up = up_proc(stack, "up.log")
    daemon_pid = front_pid = None
    try:
        url = wait_for(lambda: next((ln.split("front: ")[1].split()[0].rstrip("/")
                                     for ln in up.output().splitlines() if "front: http" in ln),
                                    None), 30, "the URL from `up`")
        assert "started the daemon" in up.output()
        # `up` prints the URL that opens the door; its token authenticates the client.
        token = wait_for(lambda: next((ln.split("?token=")[1].strip()
                                       for ln in up.output().splitlines() if "?token=" in ln),
                                      None), 30, "the token URL from `up`")
        api = Api(aiohttp.ClientSession(base_url=url,
                                        headers={"Authorization": f"Bearer {token}"}))
        try:
            session = await api.session()
            run = await api.wait_status(await api.start_run(session, "stream via up"))
            assert run["status"] == "completed"
        finally:
            await api.close()
        status = cli(stack, "status", str(stack.project), "--json")
        assert status.returncode == 0
        info = orjson.loads(status.stdout)
        daemon_pid = info["pid"]
        assert info["host"]["state"] == "ready" and info["database"] == "open"
        human = cli(stack, "status", str(stack.project))
        assert "daemon:     running" in human.stdout
        # `up` started the daemon: Ctrl-C stops the front, the daemon and its Host, and
        # says so.
        host_pid = info["host"]["pid"]
        up.signal(2)
        assert up.wait(30) == 0
        assert f"stopped the daemon (pid {daemon_pid}) that `up` started" in up.output()
        wait_for(lambda: pid_ended(daemon_pid) and pid_ended(host_pid),
                 30, "the daemon and its Host to stop")
        daemon_pid = None
        # --detach returns once the front serves: the URL, the pids, how to stop them.
        detached = cli(stack, "up", str(stack.project), "--port", "0", "--detach")
        assert detached.returncode == 0, detached.stderr
        out = detached.stdout
        assert "started the daemon" in out and "open in a browser: http" in out, out
        pids = re.search(r"the daemon \(pid (\d+)\) and the front \(pid (\d+)\)", out)
        assert pids is not None, out
        daemon_pid, front_pid = int(pids[1]), int(pids[2])
        assert f"stop both: llamon-playground stop {stack.project}" in out
        front_url, token = out.split("open in a browser: ")[1].split()[0].split("?token=")
        async with aiohttp.ClientSession() as http, http.get(
                front_url + "health", headers={"Authorization": f"Bearer {token}"}) as resp:
            assert resp.status == 200
        # A second `up` while that front serves attaches to it: its URL, exit 0.
        again = cli(stack, "up", str(stack.project), "--port", "0")
        assert again.returncode == 0, again.stderr
        assert f"open in a browser: {front_url}?token={token}" in again.stdout
        assert f"this front (pid {front_pid}) already serves the project" in again.stdout
        # Attached to a daemon it did not start: that one keeps running, and `up` says so.
        os.kill(front_pid, signal.SIGTERM)
        wait_for(lambda: pid_ended(front_pid), 10, "the detached front to stop")
        output = up_until_ctrl_c(stack, "up2.log")
        assert "attached to the running daemon" in output
        assert "was running before `up` and keeps running" in output
        assert psutil.pid_exists(daemon_pid)
        # `stop` ends the daemon and the front `up --detach` left.
        detached = cli(stack, "up", str(stack.project), "--port", "0", "--detach")
        assert detached.returncode == 0, detached.stderr
        front_pid = int(re.findall(r"the front \(pid (\d+)\)", detached.stdout)[0])
        stopped = cli(stack, "stop", str(stack.project))
        assert stopped.returncode == 0 and f"stopped the front (pid {front_pid})" in stopped.stdout
        assert pid_ended(front_pid)  # `stop` waits for its fronts: their port is free
        daemon_pid = front_pid = None
    finally:
        up.stop()
        if front_pid is not None:
            kill_tree(process_tree(front_pid), grace=10)
        if daemon_pid is not None:
            kill_tree(process_tree(daemon_pid), grace=10)
        discovery = stack.settings.discovery_path
        wait_for(lambda: not discovery.exists(), 10, "the daemon to clean up")
