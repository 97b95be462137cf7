"""The generation record in the runtime directory, and finding a Host a dead daemon left.

Each generation is recorded as soon as it is spawned and forgotten once it is
stopped, so a daemon that dies in between leaves enough for the next one to reap it.

A pid from a file is never signalled on its own: the process must also have the recorded
create time and carry our environment marker, or it is somebody else's and left alone.

The whole Host tree goes too: PR_SET_PDEATHSIG reaches only the direct child, and a process
group only those that stay in it. A Host started through a shell or a launcher
(`sh -c "python -m app.host; true"`, `uv run ...`) runs as a grandchild, and a grandchild
may call setsid(); each still carries the environment it was started with (unless it clears
it on purpose). The generation's marker says what a stop ends; the project's tree id
(`ENV_TREE`) what boot reaping ends: every process any earlier daemon of this project left.
"""

from __future__ import annotations

import hashlib
import logging
import os
import signal
import time
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
    wait_gone([proc], KILL_WAIT)
    path.unlink(missing_ok=True)
    return True


KILL_WAIT = 5.0


def wait_gone(procs: list[psutil.Process], timeout: float) -> None:
    """Wait (bounded) until each process has exited. A killed process that is not our
    child stays a zombie until its parent (often init) reaps it, which can take seconds;
    it is gone for our purpose, so waiting for the pid to vanish (psutil's wait) would only
    delay what comes next (the tree's other processes, the next pass)."""
    deadline = time.monotonic() + timeout
    while any(not _exited(p) for p in procs) and time.monotonic() < deadline:
        time.sleep(0.02)


def _exited(proc: psutil.Process) -> bool:
    try:
        return proc.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True
    except psutil.Error:
        return False


def tree_id(record_path: Path) -> str:
    """One project's tree: its runtime directory is its own (a hash, not the path)."""
    return hashlib.sha256(str(record_path.resolve()).encode()).hexdigest()[:24]


def marked(name: str, value: str) -> list[psutil.Process]:
    """Our user's live processes whose environment has `name=value` (never this one)."""
    found = []
    me, uid = os.getpid(), os.getuid()
    for proc in psutil.process_iter(["pid", "uids"]):
        try:
            if proc.pid == me or proc.info["uids"] is None or proc.info["uids"].real != uid:
                continue
            if proc.environ().get(name) == value and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except (psutil.Error, OSError):
            continue  # gone, or not ours to read
    return found


def reap_marked(name: str, value: str, when: str) -> list[dict[str, Any]]:
    """SIGKILL every process marked `name=value`; what was reaped, for GET /host."""
    procs = marked(name, value)
    reaped = []
    for proc in procs:
        try:
            cmdline = proc.cmdline()
            proc.kill()
        except psutil.Error:
            continue
        reaped.append({"pid": proc.pid, "cmdline": cmdline[:8], "when": when,
                       "at": time.time()})
    if procs:
        wait_gone(procs, KILL_WAIT)
        log.warning("reaped %d process(es) of the Host tree (%s): %s", len(reaped), when,
                    ", ".join(str(r["pid"]) for r in reaped))
    return reaped
