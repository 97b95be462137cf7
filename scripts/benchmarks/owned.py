"""Everything one benchmark run started (stacks, temp dirs, pids), so teardown never misses one."""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import psutil

from scripts.benchmarks.clients.client import call, direct_session
from scripts.benchmarks.meters import cpu_seconds
from scripts.benchmarks.stack import Stack, copy_example, process_tree, short_tmpdir


class Owned:
    """The owner of every process and temp dir of one run; `close_all` tears them down."""

    def __init__(self) -> None:
        self.stacks: list[Stack] = []
        self.dirs: list[Path] = []
        self.pids: set[int] = set()
        self.child_cpu = 0.0  # CPU seconds our daemons, fronts and Hosts used (noise accounting)
        # What one section saw that a later one quotes in its notes (same run).
        self.notes: dict[str, Any] = {}

    def tmpdir(self, prefix: str) -> Path:
        path = short_tmpdir(prefix)
        self.dirs.append(path)
        return path

    def stack(self, project: Path, runtime_base: Path,
              extra_env: dict[str, str] | None = None) -> Stack:
        stack = Stack(project, runtime_base, extra_env=extra_env)
        self.stacks.append(stack)
        return stack

    def project(self, prefix: str) -> Path:
        """A fresh copy of the example project, in a fresh temp dir of ours."""
        return copy_example(self.tmpdir(prefix))

    def start(self, project: Path, extra_env: dict[str, str] | None = None) -> Stack:
        """A running daemon for `project`, on a runtime dir of its own beside the project."""
        runtime = Path(tempfile.mkdtemp(prefix="rt", dir=project.parent))
        stack = self.stack(project, runtime, extra_env)
        stack.start_daemon()
        return stack

    async def session_fixture(self, project: Path, title: str,
                             extra_env: dict[str, str] | None = None
                             ) -> tuple[dict[str, Any], Path]:
        """Create one session through a daemon, then stop it (SIGTERM: the database closes
        cleanly), so a fixture can be written straight into the SQLite file: (the session,
        that file)."""
        stack = self.start(project, extra_env)
        try:
            async with direct_session(stack) as http:
                session: dict[str, Any] = await call(http, "POST", "sessions", {"title": title},
                                                     want=201)
        finally:
            self.close_stack(stack)
        return session, stack.settings.db_path

    def note(self, stack: Stack) -> None:
        """Remember every pid of the stack's trees (checked for leftovers at the end)."""
        procs = ([stack.daemon] if stack.daemon else []) + stack.fronts
        for proc in procs:
            for p in process_tree(proc.pid):
                self.pids.add(p.pid)

    def close_stack(self, stack: Stack) -> None:
        self.note(stack)
        stack.remember_hosts()
        self.pids.update(stack.hosts_seen)
        procs = ([stack.daemon] if stack.daemon else []) + stack.fronts
        self.child_cpu += cpu_seconds([p.pid for proc in procs for p in process_tree(proc.pid)])
        try:
            stack.close()
        finally:
            if stack in self.stacks:
                self.stacks.remove(stack)

    def close_all(self) -> list[int]:
        """Tear down every stack and temp dir; the pids of ours still alive afterwards."""
        for stack in list(self.stacks):
            try:
                self.close_stack(stack)
            except Exception as exc:  # noqa: BLE001 (keep tearing the others down)
                print(f"teardown error: {exc}", file=sys.stderr)
        for path in self.dirs:
            shutil.rmtree(path, ignore_errors=True)
        self.dirs.clear()
        alive = []
        for pid in sorted(self.pids):
            try:
                proc = psutil.Process(pid)
                if proc.status() != psutil.STATUS_ZOMBIE:
                    alive.append(pid)
            except psutil.Error:
                pass
        return alive
