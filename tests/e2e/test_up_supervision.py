"""`up` supervises what it started: the daemon comes back by itself, the front dies with its
`up` (SIGKILL too: `up` is the front), a second `up` attaches to the front that serves, `stop`
ends every front.

Real processes throughout: `up`, its daemon, each test's own in a session of its own. This
file also runs on the portable side of the platform seam (.ci/portable-tests).
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import orjson
import psutil

from llamon_playground.cli.daemon_fork import PROCESS_NAME
from llamon_playground.common.platform import LINUX, choose
from tests.support.procs import REPO, Proc, Stack, pid_ended, wait_for


def cli(stack: Stack, *args: str, env: dict[str, str] | None = None,
        cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "llamon_playground", *args],
                          env=env or stack.env, cwd=cwd, capture_output=True, text=True,
                          timeout=90, check=False)


def start_up(stack: Stack, log: str = "up.log") -> Proc:
    up = Proc([sys.executable, "-m", "llamon_playground", "up", str(stack.project), "--port",
               "0"], stack.env, stack.runtime_base / log, REPO)
    wait_for(lambda: "open in a browser: " in up.output(), 60, "the front of `up`")
    return up


def daemon_pid(stack: Stack) -> int:
    return int(orjson.loads(stack.settings.discovery_path.read_bytes())["pid"])


def front_pids(stack: Stack) -> list[int]:
    folder = stack.settings.runtime_dir / "fronts"
    return sorted(int(p.name.split(".")[0]) for p in folder.glob("*.json"))


def token_link(output: str) -> str:
    return output.split("open in a browser: ")[-1].split()[0]


def stop_all(stack: Stack, *procs: Proc) -> None:
    cli(stack, "stop", str(stack.project))
    for proc in procs:
        proc.stop()


def front_port(output: str) -> int:
    return int(output.split("front: http://127.0.0.1:")[1].split("/")[0])


def port_closed(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) != 0


def test_up_is_its_front_and_nothing_of_it_only_waits(stack: Stack) -> None:
    """The processes `up` leaves: itself serving the front, the daemon it started (and what
    the daemon runs); no front process beside `up`, none waiting on another."""
    up = start_up(stack)
    try:
        assert wait_for(lambda: front_pids(stack), 10, "the front's record") == [up.pid]
        children = psutil.Process(up.pid).children()
        assert [child.pid for child in children] == [daemon_pid(stack)]
        assert not any("front" in p.cmdline() for p in psutil.Process(up.pid).children(
            recursive=True))
    finally:
        stop_all(stack, up)


def test_a_killed_up_takes_its_front_along(stack: Stack) -> None:
    up = start_up(stack)
    try:
        port = front_port(up.output())
        assert not port_closed(port)
        up.signal(signal.SIGKILL)
        up.wait(10)
        assert port_closed(port)  # the front was `up` itself: gone with it, port and all
        # Its daemon is left (as after any crash); the next `up` attaches to it.
        assert not pid_ended(daemon_pid(stack))
    finally:
        stop_all(stack, up)


def test_a_second_up_and_up_detach_after_a_daemon_kill_reuse_the_front(stack: Stack) -> None:
    up = start_up(stack)
    try:
        [front] = wait_for(lambda: front_pids(stack), 10, "the front's record")
        link = token_link(up.output())
        first = daemon_pid(stack)
        os.kill(first, signal.SIGKILL)
        wait_for(lambda: pid_ended(first), 10, "the daemon to die")
        # A second `up` right after the kill: no traceback, no second front, the URL, exit 0.
        again = cli(stack, "up", str(stack.project), "--port", "0")
        assert again.returncode == 0, again.stderr
        assert f"open in a browser: {link}" in again.stdout
        assert f"this front (pid {front}) already serves the project" in again.stdout
        assert "Traceback" not in again.stderr
        # ... and the first `up` brought the daemon back by itself.
        wait_for(lambda: "started the daemon again" in up.output(), 30, "the restart")
        assert "died (killed by SIGKILL)" in up.output(), up.output()
        assert up.popen.poll() is None and front_pids(stack) == [front]
        assert daemon_pid(stack) != first
        assert cli(stack, "stop", str(stack.project)).returncode == 0
        assert up.wait(30) == 0
    finally:
        stop_all(stack, up)


def test_up_detach_after_a_daemon_kill_starts_the_daemon_and_keeps_the_front(
        stack: Stack) -> None:
    detached = cli(stack, "up", str(stack.project), "--port", "0", "--detach")
    assert detached.returncode == 0, detached.stderr
    found = re.search(r"the daemon \(pid (\d+)\) and the front \(pid (\d+)\)", detached.stdout)
    assert found is not None, detached.stdout
    first, front = int(found[1]), int(found[2])
    try:
        os.kill(first, signal.SIGKILL)
        wait_for(lambda: pid_ended(first), 10, "the daemon to die")
        again = cli(stack, "up", str(stack.project), "--port", "0", "--detach")
        assert again.returncode == 0, again.stderr
        assert "started the daemon (pid" in again.stdout and "Traceback" not in again.stderr
        assert f"open in a browser: {token_link(detached.stdout)}" in again.stdout
        assert f"this front (pid {front}) already serves" in again.stdout
        assert front_pids(stack) == [front] and daemon_pid(stack) != first
        status = cli(stack, "status", str(stack.project), "--json")
        assert status.returncode == 0 and orjson.loads(status.stdout)["pid"] == daemon_pid(stack)
    finally:
        stopped = cli(stack, "stop", str(stack.project))
    assert stopped.returncode == 0 and f"stopped the front (pid {front})" in stopped.stdout
    assert pid_ended(front)


def test_stop_ends_fronts_it_did_not_start(stack: Stack) -> None:
    """A foreground `up`'s front, and a front started by hand (no record names it): `stop`
    ends both, and the `up` ends with its front."""
    up = start_up(stack)
    by_hand, _ = stack.start_front()
    try:
        [front] = wait_for(lambda: front_pids(stack), 10, "the front's record")
        stopped = cli(stack, "stop", str(stack.project))
        assert stopped.returncode == 0, stopped.stderr
        # The one no record names, found by its command line; `up`'s own front ends with
        # the daemon or by `stop`, whichever comes first.
        assert f"stopped the front (pid {by_hand.pid})" in stopped.stdout
        assert pid_ended(by_hand.pid)  # `stop` returns once its fronts are gone
        assert up.wait(30) == 0
        assert pid_ended(front)
    finally:
        stop_all(stack, up, by_hand)


def test_stop_with_no_daemon_still_ends_the_front(stack: Stack) -> None:
    """A detached front (no `up` to start its daemon again) whose daemon crashed."""
    detached = cli(stack, "up", str(stack.project), "--port", "0", "--detach")
    assert detached.returncode == 0, detached.stderr
    [front] = front_pids(stack)
    try:
        first = daemon_pid(stack)
        os.kill(first, signal.SIGKILL)
        wait_for(lambda: pid_ended(first), 10, "the daemon to die")
        stopped = cli(stack, "stop", str(stack.project))
        assert stopped.returncode == 0, stopped.stderr
        assert f"stopped the front (pid {front})" in stopped.stdout
        assert "no daemon was running" in stopped.stdout and pid_ended(front)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(front, signal.SIGKILL)


def test_commands_name_the_project_unless_it_is_the_current_folder(stack: Stack) -> None:
    away = cli(stack, "status", str(stack.project))
    assert away.returncode == 3
    elsewhere = cli(stack, "runs", str(stack.project))
    assert f"`llamon-playground up {stack.project}`" in elsewhere.stderr
    here = cli(stack, "runs", cwd=stack.project)
    assert "start one with `llamon-playground up`" in here.stderr


# A stand-in for an interpreter without the `examples` extra: installing a second Python
# environment without a2a-sdk costs minutes, so this sitecustomize (on PYTHONPATH) makes
# importing a2a and uvicorn fail exactly as when they are absent, for `up` and the Host alike.
ABSENT = '''
import sys
from importlib.abc import MetaPathFinder

class Absent(MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("a2a", "uvicorn"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, Absent())
'''


def test_up_on_the_example_without_its_extra_says_so_at_once(stack: Stack,
                                                               tmp_path: Path) -> None:
    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "sitecustomize.py").write_text(ABSENT)
    env = {**stack.env, "PYTHONPATH": str(shim)}
    up = Proc([sys.executable, "-m", "llamon_playground", "up", str(stack.project), "--port",
               "0"], env, stack.runtime_base / "up.log", REPO)
    try:
        wait_for(lambda: "front: http" in up.output(), 60, "the front of `up`")
        out = up.output()
        warning = next(line for line in out.splitlines() if "`examples` extra" in line)
        # Every missing module in one line, and the one command that installs them all.
        assert "'a2a', 'uvicorn'" in warning and "starlette" not in warning
        assert "pip install 'llamon-playground[examples]'" in warning
        assert out.index(warning) < out.index("front: http")  # before anything is served
    finally:
        stop_all(stack, up)
    # With the extra there, not a word about it.
    plain = cli(stack, "up", str(stack.project), "--port", "0", "--detach")
    try:
        assert plain.returncode == 0 and "extra" not in plain.stderr, plain.stderr
    finally:
        cli(stack, "stop", str(stack.project))


def test_up_prints_the_postgresql_warning_status_shows(stack: Stack) -> None:
    pyproject = stack.project / "pyproject.toml"
    pyproject.write_text(pyproject.read_text() + 'state_backend = "postgresql"\n')
    up = cli(stack, "up", str(stack.project), "--port", "0", "--detach")
    try:
        assert up.returncode == 0, up.stderr
        status = cli(stack, "status", str(stack.project))
        said = re.search(r"warning:\s+(\[tool\.llamon\]\.state_backend is PostgreSQL.*)",
                         status.stdout)
        assert said is not None, status.stdout
        assert f"llamon-playground: warning: {said[1]}" in up.stderr
    finally:
        cli(stack, "stop", str(stack.project))


def test_up_forks_its_daemon_which_keeps_nothing_up_was_handed(stack: Stack) -> None:
    """On Linux the daemon `up` starts is forked from it, so the two share their common
    pages (`up_pss_idle` in scripts/bench), and is named for what it is. A descriptor `up`
    was handed (a terminal's, a CI runner's pipe) stays `up`'s: the daemon outlives `up`
    and must not hold it open."""
    r, w = os.pipe()
    try:
        up = Proc([sys.executable, "-m", "llamon_playground", "up", str(stack.project),
                   "--port", "0"], stack.env, stack.runtime_base / "up.log", REPO,
                  pass_fds=(w,))
    finally:
        os.close(w)
    try:
        wait_for(lambda: "open in a browser: " in up.output(), 60, "the front of `up`")
        daemon = psutil.Process(daemon_pid(stack))
        assert daemon.ppid() == up.pid
        if choose(stack.env, sys.platform).name == LINUX:
            assert daemon.name() == PROCESS_NAME.decode()
            assert daemon.cmdline() == psutil.Process(up.pid).cmdline()
        else:  # the portable side runs it anew
            assert "daemon" in daemon.cmdline()
        pipe = f"pipe:[{os.fstat(r).st_ino}]"
        assert pipe in [os.readlink(f"/proc/{up.pid}/fd/{fd}")
                        for fd in os.listdir(f"/proc/{up.pid}/fd")]
        held = [os.readlink(f"/proc/{daemon.pid}/fd/{fd}")
                for fd in os.listdir(f"/proc/{daemon.pid}/fd")]
        assert pipe not in held
        # It serves: a session made and a run sent through it.
        made = cli(stack, "new-session", str(stack.project))
        assert made.returncode == 0, made.stderr
        sent = cli(stack, "send", made.stdout.split()[-1], "hello", str(stack.project),
                   "--follow")
        assert sent.returncode == 0 and "completed" in sent.stderr, sent.stdout + sent.stderr
    finally:
        stop_all(stack, up)
        os.close(r)
