"""Starting and tearing down the real processes (daemon, front) the tests talk to.

Each process runs in its own process group; teardown signals the group (and the Host's
group, found as a descendant), waits with a deadline, then kills. Nothing is killed by name.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psutil

from llamon_playground.common.config import Settings, build_settings
from llamon_playground.common.process_tree import kill_tree, process_tree
from tests.support.api import FRONT_TOKENS
from tests.support.waiting import wait_for

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "echo_agent"


def short_tmpdir(prefix: str) -> Path:
    """Socket paths must stay under 108 bytes: keep runtime dirs in /tmp, not pytest's tmp."""
    return Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))


def copy_example(dest: Path, name: str = "echo_agent") -> Path:
    target = dest / name
    shutil.copytree(EXAMPLE, target, ignore=shutil.ignore_patterns(".llamon", "__pycache__"))
    return target


class Proc:
    """A started process of ours with its output in a file."""

    def __init__(self, argv: list[str], env: dict[str, str], log_path: Path, cwd: Path) -> None:
        self.log_path = log_path
        self._log = open(log_path, "ab")  # noqa: SIM115
        self.popen = subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL,
                                      stdout=self._log, stderr=subprocess.STDOUT,
                                      start_new_session=True)
        self.pid = self.popen.pid

    def output(self) -> str:
        return self.log_path.read_text(errors="replace")

    def signal(self, sig: int) -> None:
        os.kill(self.pid, sig)

    def wait(self, timeout: float) -> int:
        return self.popen.wait(timeout)

    def descendants(self) -> list[psutil.Process]:
        return process_tree(self.pid)[1:]

    def stop(self) -> None:
        if self._log.closed:
            return
        kill_tree(process_tree(self.pid) or [], grace=5.0)
        if self.popen.poll() is None:
            self.popen.kill()
        self.popen.wait(10)
        self._log.close()


def front_url(proc: Proc) -> str | None:
    """The URL a started front announced (None until it has)."""
    if proc.popen.poll() is not None:
        raise RuntimeError(f"front exited early:\n{proc.output()}")
    for line in proc.output().splitlines():
        if "front: http://" in line:
            return line.split("front: ")[1].split()[0].rstrip("/")
    return None


class Stack:
    """The daemon (and optionally fronts) for one project, owned by one test."""

    def __init__(self, project: Path, runtime_base: Path, extra_env: dict[str, str] | None = None
                 ) -> None:
        self.project = project
        self.runtime_base = runtime_base
        # Every front of this stack opens its door with this token.
        self.token = secrets.token_urlsafe(32)
        self.env = {**os.environ, "LLAMON_PLAYGROUND_RUNTIME_DIR": str(runtime_base),
                    "LLAMON_PLAYGROUND_HOST_STOP_GRACE": "2",
                    "LLAMON_PLAYGROUND_TOKEN": self.token, **(extra_env or {})}
        self.settings: Settings = build_settings(project, self.env)
        self.daemon: Proc | None = None
        self.fronts: list[Proc] = []
        self.hosts_seen: set[int] = set()

    def start_daemon(self) -> Proc:
        if self.daemon is not None:  # a restart: reap the previous one (and its log file)
            self.remember_hosts()
            self.daemon.stop()
        log = self.runtime_base / f"daemon-{uuid.uuid4().hex[:8]}.log"
        self.daemon = Proc([sys.executable, "-m", "llamon_playground", "daemon", str(self.project)],
                           self.env, log, REPO)
        wait_for(self._healthy, 30, "the daemon's socket")
        return self.daemon

    def _healthy(self) -> bool:
        assert self.daemon is not None
        if self.daemon.popen.poll() is not None:
            raise RuntimeError(f"daemon exited early:\n{self.daemon.output()}")
        import socket
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
        """A new front; `port` 0 picks a free one, a given one replaces a stopped front."""
        # Unique: another Stack on the same runtime dir must never read this front's URL.
        log = self.runtime_base / f"front-{uuid.uuid4().hex[:8]}.log"
        front = Proc([sys.executable, "-m", "llamon_playground", "front", str(self.project),
                      "--port", str(port)], self.env, log, REPO)
        self.fronts.append(front)
        found = wait_for(lambda: front_url(front), 30, "the front's URL")
        FRONT_TOKENS[found] = self.env["LLAMON_PLAYGROUND_TOKEN"]
        return front, found

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


@contextmanager
def stack_for(project: Path, runtime_base: Path, **kw: Any) -> Iterator[Stack]:
    stack = Stack(project, runtime_base, **kw)
    try:
        yield stack
    finally:
        stack.close()
