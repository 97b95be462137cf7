"""A daemon (and fronts) for one project, and lone children, each in a session of its own.

Stopping one signals its tree's process groups (the Host's among them), waits with a
deadline, then kills; nothing is killed by name. Runtime dirs live in /tmp: Unix socket
paths must stay under 108 bytes.
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
import uuid
from pathlib import Path

import psutil

from llamon_playground.cli.bundled_example import shipped_example
from llamon_playground.common.config import ENV_TOKEN, Settings, build_settings
from llamon_playground.common.process_tree import kill_tree, process_tree
from llamon_playground.harness.waiting import wait_for

FRONT_ANNOUNCES = "front: http://"


def short_tmpdir(prefix: str) -> Path:
    return Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))


def copy_example(dest: Path, name: str = "echo_agent") -> Path:
    """A fresh copy of the bundled example project at `dest/name` (no history, no caches)."""
    target = dest / name
    shutil.copytree(shipped_example(), target,
                    ignore=shutil.ignore_patterns(".llamon", "__pycache__"))
    return target


class Proc:
    """A child of ours in its own session, its output in a file (or discarded)."""

    def __init__(self, argv: list[str], env: dict[str, str], log_path: Path | None,
                 cwd: Path, pass_fds: tuple[int, ...] = ()) -> None:
        self.log_path = log_path
        self._log = open(log_path, "ab") if log_path else None  # noqa: SIM115
        out = self._log if self._log is not None else subprocess.DEVNULL
        self.popen = subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL,
                                      stdout=out, stderr=subprocess.STDOUT,
                                      start_new_session=True, pass_fds=pass_fds)
        self.pid = self.popen.pid
        self._stopped = False

    def output(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path else ""

    def signal(self, sig: int) -> None:
        os.kill(self.pid, sig)

    def wait(self, timeout: float) -> int:
        return self.popen.wait(timeout)

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


def front_url(proc: Proc) -> str | None:
    """The URL a started front announced (None until it has)."""
    if proc.popen.poll() is not None:
        raise RuntimeError(f"front exited early:\n{proc.output()}")
    for line in proc.output().splitlines():
        if FRONT_ANNOUNCES in line:
            return line.split("front: ")[1].split()[0].rstrip("/")
    return None


class Stack:
    """The daemon (and optionally fronts) for one project, on a runtime dir of its own."""

    def __init__(self, project: Path, runtime_base: Path,
                 extra_env: dict[str, str] | None = None, *, cwd: Path) -> None:
        self.project = project
        self.runtime_base = runtime_base
        self.cwd = cwd
        # Every front of this stack opens its door with this token.
        self.token = secrets.token_urlsafe(32)
        self.env = {**os.environ, "LLAMON_PLAYGROUND_RUNTIME_DIR": str(runtime_base),
                    "LLAMON_PLAYGROUND_HOST_STOP_GRACE": "2",
                    # A test or a bench starts the Host when it means to (one passes "1").
                    "LLAMON_PLAYGROUND_PREWARM": "0",
                    ENV_TOKEN: self.token, **(extra_env or {})}
        self.settings: Settings = build_settings(project, self.env)
        self.daemon: Proc | None = None
        self.fronts: list[Proc] = []
        self.hosts_seen: set[int] = set()

    def start_daemon(self) -> Proc:
        daemon = self._spawn_daemon()
        wait_for(self._healthy, 30, "the daemon's socket")
        return daemon

    def start_daemon_and_front(self) -> tuple[Proc, str]:
        """A daemon and a front on a free port, started side by side: the front reaches the
        daemon per request, so its start need not wait for the daemon's (on two cores the
        two starts overlap). The front and its URL, once both are up."""
        daemon = self._spawn_daemon()
        front = self._spawn_front(0)
        wait_for(self._healthy, 30, "the daemon's socket")
        url = self._announced(front)
        assert daemon is self.daemon
        return front, url

    def _spawn_daemon(self) -> Proc:
        if self.daemon is not None:  # a restart: reap the previous one (and its log file)
            self.remember_hosts()
            self.daemon.stop()
        log = self.runtime_base / f"daemon-{uuid.uuid4().hex[:8]}.log"
        self.daemon = Proc([sys.executable, "-m", "llamon_playground", "daemon",
                            str(self.project)], self.env, log, self.cwd)
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

    def start_front(self, port: int = 0) -> tuple[Proc, str]:
        """A new front and its URL; `port` 0 picks a free one, a given one replaces a
        stopped front."""
        front = self._spawn_front(port)
        return front, self._announced(front)

    def _spawn_front(self, port: int) -> Proc:
        # Unique: another Stack on the same runtime dir must never read this front's URL.
        log = self.runtime_base / f"front-{uuid.uuid4().hex[:8]}.log"
        front = Proc([sys.executable, "-m", "llamon_playground", "front", str(self.project),
                      "--port", str(port)], self.env, log, self.cwd)
        self.fronts.append(front)
        return front

    @staticmethod
    def _announced(front: Proc) -> str:
        url: str = wait_for(lambda: front_url(front) or "", 30, "the front's URL")
        return url

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
