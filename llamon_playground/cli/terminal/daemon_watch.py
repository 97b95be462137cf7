"""The daemon behind a foreground `up`: followed, and started again when it dies.

A daemon that stops cleanly (SIGTERM: `llamon-playground stop`, systemd) removes its
discovery file (`daemon.json`) before it exits; one that crashes leaves it behind. So once
the watched pid is gone: no discovery file means it was stopped, and `up` ends with it; a
discovery file means a crash, and `up` starts the daemon again, waiting longer between
tries while it keeps dying. The front keeps its port meanwhile, and a page reconnects by
itself. A daemon that answers before ours is started (systemd's restart, another `up`) is
followed instead; the project's lock lets only one serve.

The watch is a thread with psutil and a plain socket for /health, beside the front `up`
serves in its event loop: a daemon's slow start (seconds of blocking waits) never holds up
the front's requests, and the front's load never delays noticing a death.
"""

from __future__ import annotations

import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable

import orjson
import psutil

from llamon_playground.cli.connect import DaemonProcess, check_runtime_dir, spawn_daemon
from llamon_playground.cli.errors import DaemonNotRunning
from llamon_playground.cli.terminal.control import lock_held
from llamon_playground.common.config import Settings

POLL_S = 0.1
RESTART_DELAYS = (0.5, 1.0, 2.0, 4.0, 8.0, 15.0)  # the n-th try in a row waits this long
MAX_TRIES = len(RESTART_DELAYS)  # then `up` stops trying, and says where to look
STABLE_S = 30.0  # a daemon up this long starts the count afresh
START_TIMEOUT = 30.0
HEALTH_TIMEOUT = 1.0
REAP_WAIT = 5.0


def _gone(pid: int) -> bool:
    try:
        return bool(psutil.Process(pid).status() == psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return True
    except psutil.Error:
        return False


def alive(pid: int) -> bool:
    """The process runs (a zombie does not)."""
    return not _gone(pid)


def answers(settings: Settings) -> bool:
    """Whether a daemon answers 200 on the project's socket."""
    try:
        check_runtime_dir(settings)
    except DaemonNotRunning:
        return False
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(HEALTH_TIMEOUT)
        try:
            sock.connect(str(settings.socket_path))
            sock.sendall(b"GET /health HTTP/1.1\r\nHost: daemon\r\nConnection: close\r\n\r\n")
            return sock.recv(64).startswith(b"HTTP/1.1 200")
        except OSError:
            return False


def discovered_pid(settings: Settings) -> int | None:
    try:
        return int(orjson.loads(settings.discovery_path.read_bytes())["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def how_it_ended(proc: DaemonProcess | None) -> str:
    """How our child ended, once it has wholly: a multi-threaded process shows as a zombie
    while its other threads still exit (and it still holds the project's lock)."""
    code = None
    if proc is not None:
        try:
            code = proc.wait(REAP_WAIT)
        except subprocess.TimeoutExpired:
            pass
    if code is None:
        return "it crashed"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


class DaemonWatch:
    """A thread that follows the daemon and restarts it when it dies.

    `pid` is the daemon now followed, `started` whether this `up` started it (then `up`
    stops it at its end); `stopped` holds the pid of one that stopped cleanly, `gave_up`
    says the daemon kept dying and `up` stopped trying. Either ends `up` (`on_end`)."""

    def __init__(self, settings: Settings, pid: int, started: bool,
                 proc: DaemonProcess | None, say: Callable[[str], None]) -> None:
        self._settings = settings
        self.pid = pid
        self.started = started
        self._proc = proc
        self._say = say
        self.stopped: int | None = None
        self.gave_up = False
        self._done = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()  # `pid`/`started` change together

    def start(self, on_end: Callable[[], None]) -> None:
        self._thread = threading.Thread(target=self._run, args=(on_end,), daemon=True,
                                        name="daemon-watch")
        self._thread.start()

    def close(self) -> None:
        """Stop watching; a daemon found stopped cleanly by then is named in `stopped` (the
        front may end first: `stop` ends it right after the daemon)."""
        self._done.set()
        if self._thread is not None:
            self._thread.join(timeout=START_TIMEOUT)
        if self.stopped is None and not self.gave_up and _gone(self.pid) \
                and discovered_pid(self._settings) is None:
            self.stopped = self.pid

    def current(self) -> tuple[int, bool]:
        with self._lock:
            return self.pid, self.started

    def _run(self, on_end: Callable[[], None]) -> None:
        tries = 0
        since = time.monotonic()
        while not self._done.wait(POLL_S):
            if not _gone(self.pid):
                continue
            if discovered_pid(self._settings) is None:
                self.stopped = self.pid
                on_end()
                return
            if time.monotonic() - since >= STABLE_S:
                tries = 0
            if tries >= MAX_TRIES:
                self.gave_up = True
                self._say(f"the daemon died {MAX_TRIES} times in a row: `up` stops trying; "
                          f"see its log {self._settings.runtime_dir / 'daemon.log'}")
                on_end()
                return
            delay = RESTART_DELAYS[tries]
            tries += 1
            self._say(f"the daemon (pid {self.pid}) died ({how_it_ended(self._proc)}); "
                      f"starting it again in {delay:g} s (try {tries} of {MAX_TRIES})")
            self._until_unlocked()
            if self._done.wait(delay) or not self._restart():
                continue
            since = time.monotonic()

    def _until_unlocked(self) -> None:
        # A dead daemon not ours to reap may still be exiting its other threads, holding
        # the lock: a daemon started now would refuse to serve.
        deadline = time.monotonic() + REAP_WAIT
        while lock_held(self._settings) and not answers(self._settings) \
                and time.monotonic() < deadline and not self._done.wait(0.05):
            pass

    def _restart(self) -> bool:
        """Start a daemon (or follow one that already answers); whether one serves."""
        if answers(self._settings):
            return self._follow(discovered_pid(self._settings), None, started=False)
        proc = spawn_daemon(self._settings)
        deadline = time.monotonic() + START_TIMEOUT
        while not answers(self._settings):
            if proc.poll() is not None:  # lost the lock to another daemon, or failed to boot
                if answers(self._settings):
                    return self._follow(discovered_pid(self._settings), None, started=False)
                self._follow(proc.pid, proc, started=True)  # dead: the next turn says how
                return False
            if time.monotonic() > deadline:
                proc.kill()
                proc.wait()
                self._follow(proc.pid, proc, started=True)
                return False
            time.sleep(0.05)
        return self._follow(proc.pid, proc, started=True)

    def _follow(self, pid: int | None, proc: DaemonProcess | None,
                started: bool) -> bool:
        if pid is None:
            return False
        with self._lock:
            self.pid, self.started, self._proc = pid, started, proc
        if proc is not None and proc.poll() is None:
            self._say(f"started the daemon again (pid {pid}); the front keeps its port and "
                      "an open page reconnects by itself")
        elif proc is None:
            self._say(f"following the daemon that now serves the project (pid {pid})")
        return True
