"""Stopping a tree of our own child processes by process group, never by name.

SIGTERM to every group in the tree, a bounded wait, then SIGKILL to whatever is left; a
process or group already gone counts as stopped. Used by whoever owns children outside the
daemon's event loop: the test suite and the benchmark (the daemon stops its Host with the
async equivalent in `host_manager.process`).
"""

from __future__ import annotations

import os
import signal
import time

import psutil


def process_tree(pid: int) -> list[psutil.Process]:
    """The process and all its descendants (empty when it is gone)."""
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.Error:
        return []


def _signal_groups(groups: set[int], sig: signal.Signals) -> None:
    for group in groups:
        try:
            os.killpg(group, sig)
        except (ProcessLookupError, PermissionError):
            pass


def kill_tree(procs: list[psutil.Process], grace: float = 5.0) -> None:
    """SIGTERM each process's group, wait up to `grace`, then SIGKILL whatever is left."""
    groups = set()
    for proc in procs:
        try:
            groups.add(os.getpgid(proc.pid))
        except (ProcessLookupError, psutil.Error):
            pass
    _signal_groups(groups, signal.SIGTERM)
    alive = _wait_stopped(procs, grace)
    _signal_groups(groups, signal.SIGKILL)  # whatever else is left in those groups, too
    _wait_stopped(alive, grace)


def _wait_stopped(procs: list[psutil.Process], timeout: float) -> list[psutil.Process]:
    """Those of `procs` still running after up to `timeout`. A zombie counts as stopped:
    one whose parent died is reaped by init, which on some machines (a VM's init) takes
    its time: psutil.wait_procs waited up to a second more for each such grandchild."""
    deadline = time.monotonic() + timeout
    interval = 0.001
    while True:
        alive = [p for p in procs if _running(p)]
        if not alive or time.monotonic() >= deadline:
            return alive
        time.sleep(interval)
        interval = min(interval * 2, 0.02)


def _running(proc: psutil.Process) -> bool:
    try:
        # Exited; its parent reaps it (our own child: the caller, with its exit status).
        return bool(proc.status() != psutil.STATUS_ZOMBIE)
    except psutil.Error:  # gone (NoSuchProcess), or not ours to look at
        return False
