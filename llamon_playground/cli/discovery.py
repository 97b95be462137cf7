"""Every daemon of this user on this machine, as `llamon-playground list` shows them and a
Studio finds one to attach to (the habit of `jupyter server list`).

A daemon writes `<runtime base>/<project key>/daemon.json` (pid, project, socket, version)
once its socket listens and removes it when it stops. A file whose pid is gone (a daemon
that crashed) is skipped; each live one is asked its /health over its socket for the active
run and the Host's state. A front `up` started is named from its `front.json`.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypedDict

import aiohttp
import orjson
import psutil

from llamon_playground.cli.front_record import fronts_in
from llamon_playground.common.config import default_runtime_base

HEALTH_TIMEOUT = 2.0


class DaemonInfo(TypedDict):
    """One running daemon. `health` is False when it did not answer /health in time."""

    project: str
    pid: int
    socket: str
    version: str | None
    front_url: str | None
    active_run_id: str | None
    host_state: str | None
    healthy: bool


def _alive(pid: int) -> bool:
    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except psutil.Error:
        return False


async def _health(socket_path: str) -> dict[str, Any] | None:
    try:
        async with aiohttp.ClientSession(
                connector=aiohttp.UnixConnector(path=socket_path),
                timeout=aiohttp.ClientTimeout(total=HEALTH_TIMEOUT)) as http:
            async with http.get("http://daemon/health") as resp:
                doc = orjson.loads(await resp.read())
    except (aiohttp.ClientError, OSError, TimeoutError, orjson.JSONDecodeError):
        return None
    return doc if isinstance(doc, dict) else None


async def _describe(runtime_dir: Path, doc: dict[str, Any]) -> DaemonInfo:
    health = await _health(str(doc["socket"]))
    fronts = fronts_in(runtime_dir)
    front = fronts[0] if fronts else None
    host = (health or {}).get("host") or {}
    return DaemonInfo(project=str(doc["project"]), pid=int(doc["pid"]),
                      socket=str(doc["socket"]), version=doc.get("version"),
                      front_url=front.get("url") if front else None,
                      active_run_id=(health or {}).get("active_run_id"),
                      host_state=host.get("state"), healthy=health is not None)


async def list_daemons(environ: Mapping[str, str] | None = None) -> list[DaemonInfo]:
    """The running daemons of this user (in the runtime base `environ` names), by project."""
    base = default_runtime_base(os.environ if environ is None else environ)
    found: list[tuple[Path, dict[str, Any]]] = []
    try:
        entries = sorted(base.iterdir())
    except OSError:
        return []
    for runtime_dir in entries:
        try:
            doc = orjson.loads((runtime_dir / "daemon.json").read_bytes())
        except (OSError, orjson.JSONDecodeError):
            continue
        if isinstance(doc, dict) and isinstance(doc.get("pid"), int) and _alive(doc["pid"]) \
                and doc.get("socket") and doc.get("project"):
            found.append((runtime_dir, doc))
    infos = await asyncio.gather(*(_describe(d, doc) for d, doc in found))
    return sorted(infos, key=lambda info: info["project"])
