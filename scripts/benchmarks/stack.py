"""The processes the benchmark starts: `llamon_playground.harness`'s, run from the repository.

Each process runs in its own session (process group); stopping one signals its group (and the
groups of its descendants, the Host among them), waits with a deadline, then kills. Nothing is
killed by name.
"""

from __future__ import annotations

from pathlib import Path

from llamon_playground.common.process_tree import process_tree
from llamon_playground.harness import processes
from llamon_playground.harness.processes import Proc, copy_example, short_tmpdir
from llamon_playground.host_manager.environment import free_port

REPO = Path(__file__).resolve().parents[2]

__all__ = ["REPO", "Proc", "Stack", "copy_example", "free_port", "process_tree", "short_tmpdir"]


class Stack(processes.Stack):
    """The daemon (and optionally fronts) for one project, run from the repository."""

    def __init__(self, project: Path, runtime_base: Path,
                 extra_env: dict[str, str] | None = None) -> None:
        super().__init__(project, runtime_base, extra_env, cwd=REPO)
