"""Did the daemon in front of a foreground `up` stop on purpose, or did it crash?

A daemon that stops cleanly (SIGTERM: `llamon-playground stop`, systemd) removes its
discovery file (`daemon.json`) before it exits; one that crashes leaves it behind. So once
the watched pid is gone: no discovery file means it was stopped, and `up` ends with it;
a discovery file means a crash, and the watch follows whichever daemon writes it next.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import orjson
import psutil

from llamon_playground.common.config import Settings

POLL_S = 0.1


def _gone(pid: int) -> bool:
    try:
        return bool(psutil.Process(pid).status() == psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return True
    except psutil.Error:
        return False


class DaemonWatch:
    """A thread polling the daemon; `stopped` holds the pid of one that stopped cleanly."""

    def __init__(self, settings: Settings, pid: int) -> None:
        self._settings = settings
        self._pid = pid
        self.stopped: int | None = None
        self._done = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, on_stop: Callable[[], None]) -> None:
        self._thread = threading.Thread(target=self._run, args=(on_stop,), daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._done.set()
        if self._thread is not None:
            self._thread.join(timeout=2.0)

    def _run(self, on_stop: Callable[[], None]) -> None:
        while not self._done.wait(POLL_S):
            if not _gone(self._pid):
                continue
            current = self._discovered_pid()
            if current is None:
                self.stopped = self._pid
                on_stop()
                return
            self._pid = current  # a crash: follow the next daemon (or wait for one)

    def _discovered_pid(self) -> int | None:
        try:
            return int(orjson.loads(self._settings.discovery_path.read_bytes())["pid"])
        except (OSError, ValueError, KeyError, TypeError):
            return None
