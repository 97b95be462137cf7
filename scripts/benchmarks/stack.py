"""The processes the benchmark starts: a daemon (and fronts) for one project, plus lone children.

Each process runs in its own session (process group); stopping one signals its group (and the
groups of its descendants, the Host among them), waits with a deadline, then kills. Nothing is
killed by name.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import psutil

from llamon_playground.cli.bundled_example import shipped_example
from llamon_playground.common.config import ENV_TOKEN, Settings, build_settings
from llamon_playground.common.process_tree import kill_tree, process_tree

REPO = Path(__file__).resolve().parents[2]
T = TypeVar("T")


def short_tmpdir(prefix: str) -> Path:
    """Socket paths must stay under 108 bytes: keep runtime dirs in /tmp."""
    return Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))


def copy_example(dest: Path, name: str = "echo_agent") -> Path:
    """A fresh copy of the bundled example project at `dest/name` (no history, no caches)."""
    target = dest / name
    shutil.copytree(shipped_example(), target,
                    ignore=shutil.ignore_patterns(".llamon", "__pycache__"))
    return target


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(predicate: Callable[[], T | None], timeout: float, what: str,
             interval: float = 0.02) -> T:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


class Proc:
    """A child of ours in its own session, its output in a file (or discarded)."""

    def __init__(self, argv: list[str], cwd: Path, env: dict[str, str],
                 log_path: Path | None = None) -> None:
        self.log_path = log_path
        self._log = open(log_path, "ab") if log_path else None  # noqa: SIM115
        out = self._log if self._log is not None else subprocess.DEVNULL
        self.popen = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                      stdout=out, stderr=subprocess.STDOUT,
                                      start_new_session=True)
        self.pid = self.popen.pid
        self._stopped = False

    def output(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path else ""

    def descendants(self) -> list[psutil.Process]:
        return process_tree(self.pid)[1:]

    def stop(self, grace: float = 5.0) -> None:
        """Signal the tree's groups, wait `grace`, kill; then reap and close the log."""
        if self._stopped:
            return
        self._stopped = True
        try:
            kill_tree(process_tree(self.pid) or [], grace=grace)
        finally:
            if self.popen.poll() is None:
                try:
                    os.killpg(self.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            try:
                self.popen.wait(10)
            except subprocess.TimeoutExpired:
                pass
            if self._log is not None:
                self._log.close()


class Stack:
    """The daemon (and optionally fronts) for one project, on a runtime dir of its own."""

    def __init__(self, project: Path, runtime_base: Path,
                 extra_env: dict[str, str] | None = None) -> None:
        self.project = project
        self.runtime_base = runtime_base
        # Every front of this stack opens its door with this token.
        self.token = secrets.token_urlsafe(32)
        self.env = {**os.environ, "LLAMON_PLAYGROUND_RUNTIME_DIR": str(runtime_base),
                    "LLAMON_PLAYGROUND_HOST_STOP_GRACE": "2",
                    ENV_TOKEN: self.token, **(extra_env or {})}
        self.settings: Settings = build_settings(project, self.env)
        self.daemon: Proc | None = None
        self.fronts: list[Proc] = []
        self.hosts_seen: set[int] = set()

    def start_daemon(self) -> Proc:
        if self.daemon is not None:  # a restart: reap the previous one (and its log file)
            self.remember_hosts()
            self.daemon.stop()
        log = self.runtime_base / f"daemon-{uuid.uuid4().hex[:8]}.log"
        self.daemon = Proc([sys.executable, "-m", "llamon_playground", "daemon",
                            str(self.project)], REPO, self.env, log)
        wait_for(self._healthy, 30, "the daemon's socket")
        return self.daemon

    def _healthy(self) -> bool:
        assert self.daemon is not None
        if self.daemon.popen.poll() is not None:
            raise RuntimeError(f"daemon exited early:\n{self.daemon.output()}")
        path = str(self.settings.socket_path)
        if not os.path.exists(path):
            return False
        with socket.socket(socket.AF_UNIX) as sock:
            try:
                sock.connect(path)
                sock.sendall(b"GET /health HTTP/1.1\r\nHost: d\r\nConnection: close\r\n\r\n")
                return sock.recv(64).startswith(b"HTTP/1.1 200")
            except OSError:
                return False

    def start_front(self) -> tuple[Proc, str]:
        """Start a front on a free loopback port; (its process, its URL)."""
        # Unique: another Stack on the same runtime dir must never read this front's URL.
        log = self.runtime_base / f"front-{uuid.uuid4().hex[:8]}.log"
        front = Proc([sys.executable, "-m", "llamon_playground", "front", str(self.project),
                      "--port", "0"], REPO, self.env, log)
        self.fronts.append(front)

        def url() -> str | None:
            if front.popen.poll() is not None:
                raise RuntimeError(f"front exited early:\n{front.output()}")
            for line in front.output().splitlines():
                if "front: http://" in line:
                    return line.split("front: ")[1].split()[0].rstrip("/")
            return None
        return front, wait_for(url, 30, "the front's URL")

    def remember_hosts(self) -> None:
        if self.daemon is not None:
            self.hosts_seen.update(p.pid for p in self.daemon.descendants())

    def close(self) -> None:
        for front in self.fronts:
            front.stop()
        if self.daemon is not None:
            self.remember_hosts()
            self.daemon.stop()
        leftovers = [p for pid in self.hosts_seen for p in process_tree(pid)]
        kill_tree(leftovers, grace=2.0)
