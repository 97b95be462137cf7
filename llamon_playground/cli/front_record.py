"""Where the fronts `up` started serve: `<runtime dir>/fronts/<pid>.json` (0600),
`{pid, url, detached, auth, up_pid}` (a foreground `up` is its own front: both pids are its).

The daemon never learns its fronts' addresses; `list` reads these to show one, a second `up`
reads them to attach to the front already serving (instead of a second one failing on the
same port), and `stop` ends every front of the project: the recorded ones, and any other
`front` process of ours serving the project (one whose `up` was killed before it wrote the
record, one started by hand).
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path
from typing import Any

import orjson
import psutil

from llamon_playground.common.config import Settings

FRONT_LINE = "llamon Playground front: "  # the front's announce line (api/app.py)
STOP_WAIT = 10.0  # how long `stop` waits for a front to let go of its port
COMMAND_NAMES = ("llamon_playground", "llamon-playground")
FRONT_COMMANDS = frozenset({"front", "up"})  # the commands whose process serves a front


def _folder(runtime_dir: Path) -> Path:
    return runtime_dir / "fronts"


def record_front(settings: Settings, pid: int, url: str, *, detached: bool = False,
                 auth: bool = True, up_pid: int | None = None) -> None:
    """Write the front's record; `up_pid` is the foreground `up` that supervises it."""
    folder = _folder(settings.runtime_dir)
    tmp = folder / f"{pid}.json.tmp"
    doc = {"pid": pid, "url": url, "detached": detached, "auth": auth, "up_pid": up_pid}
    with contextlib.suppress(OSError):
        folder.mkdir(mode=0o700, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(orjson.dumps(doc))
        tmp.replace(folder / f"{pid}.json")


def _alive_front(pid: int) -> bool:
    """Still a front process of ours (not a pid reused by something else): a `front`, or
    the foreground `up` that serves its front in its own loop."""
    try:
        proc = psutil.Process(pid)
        return proc.status() != psutil.STATUS_ZOMBIE and bool(FRONT_COMMANDS
                                                                & set(proc.cmdline()))
    except psutil.Error:
        return False


def fronts_in(runtime_dir: Path) -> list[dict[str, Any]]:
    """The recorded fronts whose process still runs; a dead one's record is dropped."""
    found = []
    try:
        paths = sorted(_folder(runtime_dir).glob("*.json"))
    except OSError:
        return []
    for path in paths:
        try:
            doc = orjson.loads(path.read_bytes())
            pid = int(doc["pid"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if _alive_front(pid):
            found.append(doc)
        else:
            with contextlib.suppress(OSError):
                path.unlink()
    return found


def forget_front(settings: Settings, pid: int) -> None:
    """Remove the record of the front with `pid` (gone already: nothing to do)."""
    with contextlib.suppress(OSError):
        (_folder(settings.runtime_dir) / f"{pid}.json").unlink()


def _serves(cmdline: list[str], project_dir: Path) -> bool:
    """A `llamon-playground front PROJECT` command line, for this project."""
    if "front" not in cmdline or not any(name in part for part in cmdline[:3]
                                         for name in COMMAND_NAMES):
        return False
    at = cmdline.index("front")
    if at + 1 >= len(cmdline):
        return False
    try:
        return Path(cmdline[at + 1]).resolve() == project_dir.resolve()
    except (OSError, ValueError):
        return False


def unrecorded_fronts(settings: Settings) -> list[int]:
    """Front processes of this user serving the project that no record names."""
    recorded = {int(doc["pid"]) for doc in fronts_in(settings.runtime_dir)}
    found = []
    for proc in psutil.process_iter(["pid", "uids", "cmdline"]):
        try:
            if proc.info["uids"] is None or proc.info["uids"].real != os.getuid():
                continue
            if proc.pid not in recorded and proc.pid != os.getpid() \
                    and _serves(proc.info["cmdline"] or [], settings.project_dir):
                found.append(proc.pid)
        except (psutil.Error, KeyError, TypeError):
            continue
    return found


def stop_fronts(settings: Settings, wait: float = STOP_WAIT) -> list[int]:
    """SIGTERM every front of the project (recorded or found); wait until they are gone, so
    their port is free when this returns. Their pids."""
    pids = [int(doc["pid"]) for doc in fronts_in(settings.runtime_dir)]
    pids += unrecorded_fronts(settings)
    stopped = []
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
            stopped.append(pid)
    deadline = time.monotonic() + wait
    for pid in stopped:
        with contextlib.suppress(psutil.Error):
            psutil.Process(pid).wait(max(0.0, deadline - time.monotonic()))
        forget_front(settings, pid)
    return stopped
