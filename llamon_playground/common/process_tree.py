"""Stopping a tree of our own child processes by process group, never by name.

SIGTERM to every group in the tree, a bounded wait, then SIGKILL to whatever is left; a
process or group already gone counts as stopped. Used by whoever owns children outside the
daemon's event loop: the test suite and the benchmark (the daemon stops its Host with the
async equivalent in `host_manager.process`).
"""

from __future__ import annotations

import os
import signal

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
    _, alive = psutil.wait_procs(procs, timeout=grace)
    _signal_groups(groups, signal.SIGKILL)
    psutil.wait_procs(alive, timeout=grace)
