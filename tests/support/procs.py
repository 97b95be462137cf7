"""Starting and tearing down the real processes (daemon, front) the tests talk to.

The processes themselves are `llamon_playground.harness`'s (each in its own process group,
torn down by signalling the groups with a deadline, never by name); here they run from the
repository and every front's token is remembered for the tests' API client.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psutil

from llamon_playground.common.process_tree import kill_tree, process_tree
from llamon_playground.harness import processes
from llamon_playground.harness.processes import Proc, copy_example, front_url, short_tmpdir
from llamon_playground.harness.waiting import wait_for
from tests.support.api import FRONT_TOKENS

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "echo_agent"

__all__ = ["REPO", "EXAMPLE", "Proc", "Stack", "copy_example", "ended", "front_url", "kill_tree",
           "pid_ended", "process_tree", "short_tmpdir", "stack_for", "still_running", "wait_for"]


class Stack(processes.Stack):
    """A stack owned by one test, run from the repository."""

    def __init__(self, project: Path, runtime_base: Path,
                 extra_env: dict[str, str] | None = None) -> None:
        super().__init__(project, runtime_base, extra_env, cwd=REPO)

    def start_front(self, port: int = 0) -> tuple[Proc, str]:
        front, url = super().start_front(port)
        FRONT_TOKENS[url] = self.token
        return front, url

    def start_daemon_and_front(self) -> tuple[Proc, str]:
        front, url = super().start_daemon_and_front()
        FRONT_TOKENS[url] = self.token
        return front, url


@contextmanager
def stack_for(project: Path, runtime_base: Path, **kw: Any) -> Iterator[Stack]:
    stack = Stack(project, runtime_base, **kw)
    try:
        yield stack
    finally:
        stack.close()


def ended(proc: psutil.Process) -> bool:
    """Exited: no such process, or a zombie waiting for init (re-parented once its parent
    died, so not ours to reap)."""
    try:
        return bool(proc.status() == psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return True


def pid_ended(pid: int) -> bool:
    """`ended` for a pid."""
    try:
        return ended(psutil.Process(pid))
    except psutil.NoSuchProcess:
        return True


def still_running(procs: list[psutil.Process], timeout: float) -> list[psutil.Process]:
    """Those of `procs` still running once all have ended or `timeout` passed. Unlike
    `psutil.wait_procs`, an exited process counts as ended while it is a zombie: init reaps
    an orphan in its own time (over a second on some machines), which says nothing about
    what the test checks."""
    try:
        wait_for(lambda: all(ended(p) for p in procs), timeout, "the processes to end",
                 interval=0.01)
    except TimeoutError:
        pass
    return [p for p in procs if not ended(p)]
