"""`up` forks its daemon only when that is safe (cli/daemon_fork.py), and follows the forked
child as it would a Popen. The e2e side (the daemon forked, named, holding nothing `up` was
handed) is in tests/e2e/test_up_supervision.py."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from llamon_playground.cli.daemon_fork import ForkedDaemon
from llamon_playground.common.platform import ENV_FORCE_PORTABLE
from tests.support.procs import REPO

PROBE = textwrap.dedent("""
    from llamon_playground.cli import daemon_fork
    daemon_fork.note_inherited_fds()
    first = daemon_fork.can_fork()
    ours = open(__file__ if "__file__" in globals() else "/dev/null")
    with_a_file_of_ours = daemon_fork.can_fork()
    ours.close()
    print(first, with_a_file_of_ours, daemon_fork.can_fork())
""")


def blocked_child() -> tuple[ForkedDaemon, int]:
    """A forked child that exits 3 once the returned descriptor is closed."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # nothing but two system calls: safe whatever threads the parent has
        os.close(w)
        os.read(r, 1)
        os._exit(3)
    os.close(r)
    return ForkedDaemon(pid, ["child"]), w


def test_a_forked_child_is_followed_like_a_popen() -> None:
    child, release = blocked_child()
    try:
        assert child.poll() is None
        with pytest.raises(subprocess.TimeoutExpired):
            child.wait(0.05)
    finally:
        os.close(release)
    assert child.wait(30) == 3
    assert child.poll() == 3 and child.returncode == 3


def test_a_killed_child_says_so_and_a_second_kill_is_harmless() -> None:
    child, release = blocked_child()
    try:
        child.kill()
        assert child.wait(30) == -signal.SIGKILL
        child.kill()  # gone and reaped: nothing to signal, nothing raised
    finally:
        os.close(release)


def probe(env: dict[str, str]) -> list[str]:
    r, w = os.pipe()  # handed to the probe: open before it started, so not in its way
    try:
        done = subprocess.run([sys.executable, "-c", PROBE], env=env, cwd=REPO,
                              capture_output=True, text=True, timeout=60, check=True,
                              pass_fds=(w,))
    finally:
        os.close(r)
        os.close(w)
    return done.stdout.split()


def test_a_fork_is_taken_only_with_nothing_of_its_own_open() -> None:
    env = {k: v for k, v in os.environ.items() if k != ENV_FORCE_PORTABLE}
    assert probe(env) == ["True", "False", "True"]


def test_the_portable_side_never_forks() -> None:
    assert probe({**os.environ, ENV_FORCE_PORTABLE: "1"}) == ["False", "False", "False"]
