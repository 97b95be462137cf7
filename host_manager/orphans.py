"""The generation record in the runtime directory, and finding a Host a dead daemon left.

Each generation is recorded as soon as it is spawned and forgotten once it is
stopped, so a daemon that dies in between leaves enough for the next one to reap it.

A pid from a file is never signalled on its own: the process must also have the recorded
create time and carry our environment marker, or it is somebody else's and left alone.
"""

from __future__ import annotations

import logging
import os
import signal
from pathlib import Path
from typing import Any

import orjson
import psutil

from llamon_playground.host_manager.environment import marker
from llamon_playground.host_manager.generation import Generation

log = logging.getLogger(__name__)


def record_generation(path: Path, gen: Generation) -> None:
    """Write the record of a just-spawned generation; a failure is logged, not raised."""
    try:
        write_record(path, {
            "daemon_pid": os.getpid(), "generation": gen.number, "pid": gen.pid,
            "create_time": gen.create_time, "started_at": gen.started_at,
            "marker": gen.marker or marker(gen.number)})
    except OSError as exc:
        log.warning("could not write the Host record: %s", exc)


def forget_generation(path: Path) -> None:
    """The recorded generation is stopped: nothing left for a next daemon to reap."""
    path.unlink(missing_ok=True)


def write_record(path: Path, record: dict[str, Any]) -> None:
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(orjson.dumps(record))
    os.replace(tmp, path)


def read_record(path: Path) -> dict[str, Any] | None:
    try:
        data = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    return data if isinstance(data, dict) else None


def is_our_host(record: dict[str, Any], marker_name: str) -> psutil.Process | None:
    """The live process the record describes, if it really is that process."""
    try:
        proc = psutil.Process(int(record["pid"]))
        if abs(proc.create_time() - float(record["create_time"])) > 0.01:
            return None
        if proc.environ().get(marker_name) != record["marker"]:
            return None
        return proc
    except (KeyError, TypeError, ValueError, psutil.Error):
        return None


def reap_orphan(path: Path, marker_name: str) -> bool:
    """Kill the Host (and its group) a previous daemon recorded, if it is still alive."""
    record = read_record(path)
    if record is None:
        return False
    proc = is_our_host(record, marker_name)
    if proc is None:
        path.unlink(missing_ok=True)
        return False
    log.warning("stopping Host pid %d left by a previous daemon", proc.pid)
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(5)
    except psutil.Error:
        pass
    path.unlink(missing_ok=True)
    return True
