"""Where the fronts `up` started serve: `<runtime dir>/fronts/<pid>.json` (0600),
`{pid, url, detached}`.

The daemon never learns its fronts' addresses; `list` reads these to show one, and `stop`
ends the fronts `up --detach` left running along with their daemon (a foreground `up`
ends by itself when its daemon stops).
"""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path
from typing import Any

import orjson
import psutil

from llamon_playground.common.config import Settings

FRONT_LINE = "llamon Playground front: "  # the front's announce line (api/app.py)


def _folder(runtime_dir: Path) -> Path:
    return runtime_dir / "fronts"


def record_front(settings: Settings, pid: int, url: str, detached: bool = False) -> None:
    folder = _folder(settings.runtime_dir)
    tmp = folder / f"{pid}.json.tmp"
    with contextlib.suppress(OSError):
        folder.mkdir(mode=0o700, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(orjson.dumps({"pid": pid, "url": url, "detached": detached}))
        tmp.replace(folder / f"{pid}.json")


def _alive_front(pid: int) -> bool:
    """Still a front process of ours (not a pid reused by something else)."""
    try:
        proc = psutil.Process(pid)
        return proc.status() != psutil.STATUS_ZOMBIE and "front" in proc.cmdline()
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
    with contextlib.suppress(OSError):
        (_folder(settings.runtime_dir) / f"{pid}.json").unlink()


def stop_detached_fronts(settings: Settings) -> list[int]:
    """SIGTERM the fronts `up --detach` left; their pids."""
    stopped = []
    for doc in fronts_in(settings.runtime_dir):
        if doc.get("detached"):
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(doc["pid"]), signal.SIGTERM)
            forget_front(settings, int(doc["pid"]))
            stopped.append(int(doc["pid"]))
    return stopped
