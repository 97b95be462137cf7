"""Generations forked from a warm parent, with the cold spawn as the fallback.

At each start: a Host command that is a Python entry point (`python -m mod`, `python
script.py`) with warm starts on is forked from the project's warm parent; the parent is
(re)started first when there is none, when it runs another interpreter, or when what it
preloaded may have changed (pyproject.toml, a lock file, the virtual environment's
site-packages, any file of a module it loaded). What it preloads: the `preload` list of
`[tool.llamon]` plus the third-party modules earlier generations reported importing (a file
in the runtime directory, so a next daemon starts warm too). Anything else, or a parent
that fails, gives today's cold spawn, and the reason is said.
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from llamon_playground.common.platform import current as current_platform
from llamon_playground.host_manager.capture import ENV_TOKEN
from llamon_playground.host_manager.environment import ENV_MARKER
from llamon_playground.host_manager.process import HostProcess, Output
from llamon_playground.host_manager.spawn.parent import ParentGone, WarmParent, pipe_reader
from llamon_playground.host_manager.spawn.spawner import (
    COLD,
    WARM,
    ColdSpawner,
    EntryPoint,
    Launch,
    entry_point,
)

log = logging.getLogger(__name__)

LOCK_FILES = ("pyproject.toml", "uv.lock", "poetry.lock", "pdm.lock", "Pipfile.lock",
              "requirements.txt")
# The generation's own values: never in the parent's environment, only in the fork's.
GENERATION_ONLY = frozenset({ENV_TOKEN, "LLAMON_HOST_PORT", "LLAMON_HOST_URL", ENV_MARKER})
PRELOAD_TIMEOUT = 60.0


@dataclass(frozen=True)
class WarmOptions:
    """Read from `[tool.llamon]` at each start."""

    enabled: bool
    preload: tuple[str, ...]


@dataclass(frozen=True)
class WarmPaths:
    """The files a warm spawner keeps in the runtime directory."""

    modules: Path  # what generations reported importing from outside the project
    parent_log: Path


Stamp = tuple[tuple[str, int, int], ...]


class WarmSpawner:
    """Starts generations by forking a warm parent, (re)starting the parent when what it
    preloaded may have changed, and falls back to a cold spawn saying why."""

    def __init__(self, options: Callable[[], WarmOptions], paths: WarmPaths) -> None:
        self._options = options
        self._paths = paths
        self._cold = ColdSpawner()
        self._parent: WarmParent | None = None
        self._retired: list[WarmParent] = []  # replaced, waiting for their last generation
        self._stamp: Stamp = ()
        self._failed: tuple[str, Stamp] | None = None  # a parent that could not start, as of

    def describe(self) -> dict[str, Any] | None:
        """The warm parent (pid, Python, modules preloaded and failed), or None when there is
        none."""
        parent = self._parent
        if parent is None or parent.gone:
            return None
        return {"pid": parent.pid, "python": parent.python,
                "preloaded": len(parent.preloaded), "failed": len(parent.failed)}

    async def launch(self, argv: list[str], cwd: Path, env: Mapping[str, str],
                     on_output: Output) -> Launch:
        """Start a Host generation: forked from the warm parent when its entry point allows, else
        cold, saying why."""
        options = self._options()
        entry = entry_point(argv, cwd)
        python = _interpreter(entry, cwd, env) if entry is not None else None
        if not options.enabled or entry is None or python is None:
            self._retire_parent()  # a parent from before the edit is of no use any more
            reason = "warm_start_disabled" if not options.enabled else "not_python_entry_point"
            return await self._cold_launch(argv, cwd, env, on_output, reason)
        try:
            reason = await self._ready_parent(python, cwd, env, options)
            assert self._parent is not None
            process = await self._fork(self._parent, entry, cwd, env, on_output)
        except (ParentGone, OSError) as exc:
            log.warning("warm start failed, starting the Host cold: %s", exc)
            await self._drop_parent()
            return await self._cold_launch(argv, cwd, env, on_output, "warm_parent_failed")
        return Launch(process, WARM, reason, self._parent_marker(env))

    async def close(self) -> None:
        """After the supervisor stopped the generations: no parent is left behind."""
        retired, self._retired = self._retired, []
        for parent in retired:
            await parent.close()
        await self._drop_parent()

    async def _cold_launch(self, argv: list[str], cwd: Path, env: Mapping[str, str],
                           on_output: Output, reason: str) -> Launch:
        return await self._cold.launch(argv, cwd, env, on_output, reason=reason)

    # -- the parent -----------------------------------------------------------------------------

    async def _ready_parent(self, python: str, cwd: Path, env: Mapping[str, str],
                            options: WarmOptions) -> str:
        """A parent fit to fork from; the start_reason of the generation it forks."""
        parent = self._parent
        reason = "forked"
        self._retired = [p for p in self._retired if not p.exited()]
        if parent is not None and parent.gone:
            reason = "parent_started"
            await self._drop_parent()
        elif parent is not None and parent.python != python:
            reason = "parent_started"
            self._retire_parent()
        elif parent is not None and self._deps_stamp(cwd, parent.files) != self._stamp:
            reason = "dependencies_changed"
            self._retire_parent()
        if self._parent is None:
            if reason == "forked":
                reason = "parent_started"
            if self._failed == (python, self._deps_stamp(cwd, [])):
                raise ParentGone("the warm parent failed to start and nothing it depends on "
                                 "has changed since")
            try:
                self._parent = await WarmParent.start(python, cwd, self._parent_env(env),
                                                      self._paths.parent_log)
            except (ParentGone, OSError):
                self._failed = (python, self._deps_stamp(cwd, []))
                raise
            self._failed = None
        wanted = [m for m in (*options.preload, *self._reported())
                  if m not in self._parent.preloaded]
        if wanted or not self._stamp:
            await self._parent.preload(wanted, PRELOAD_TIMEOUT)
            self._stamp = self._deps_stamp(cwd, self._parent.files)
        return reason

    def _retire_parent(self) -> None:
        parent, self._parent = self._parent, None
        self._stamp = ()
        if parent is not None:
            parent.retire()
            self._retired.append(parent)

    async def _drop_parent(self) -> None:
        parent, self._parent = self._parent, None
        self._stamp = ()
        if parent is not None:
            await parent.close()

    async def _fork(self, parent: WarmParent, entry: EntryPoint, cwd: Path,
                    env: Mapping[str, str], on_output: Output) -> HostProcess:
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        try:
            pid = await parent.fork({
                "cwd": str(cwd), "env": dict(env), "kind": entry.kind, "target": entry.target,
                "args": list(entry.args), "argv0": entry.argv0,
                "report": str(self._paths.modules)}, out_w, err_w)
        except BaseException:
            os.close(out_r)
            os.close(err_r)
            raise
        finally:
            os.close(out_w)
            os.close(err_w)
        # Without a watch of its own on the generation (the portable side on Linux), the
        # parent's report is the exit's only sign: awaited without a time limit.
        patient = not current_platform().sees_other_exits
        return HostProcess.adopt(pid, pipe_reader(out_r), pipe_reader(err_r),
                                 lambda: parent.exit_code(pid, patient=patient), on_output)

    def _parent_env(self, env: Mapping[str, str]) -> dict[str, str]:
        parent_env = {k: v for k, v in env.items() if k not in GENERATION_ONLY}
        parent_env[ENV_MARKER] = self._parent_marker(env)
        return parent_env

    @staticmethod
    def _parent_marker(env: Mapping[str, str]) -> str:
        # A fork's /proc/<pid>/environ is its parent's: the marker a next daemon checks for
        # a warm generation is the parent's, recorded in place of the generation's own.
        return env[ENV_MARKER].rsplit(":", 1)[0] + ":warm-parent"

    def _reported(self) -> list[str]:
        try:
            names = orjson.loads(self._paths.modules.read_bytes())
        except (OSError, orjson.JSONDecodeError):
            return []
        return [n for n in names if isinstance(n, str)] if isinstance(names, list) else []

    def _deps_stamp(self, cwd: Path, files: list[str]) -> Stamp:
        """What, if changed, makes the parent's imports stale: (path, mtime_ns, size)."""
        paths = [str(cwd / name) for name in LOCK_FILES]
        parent = self._parent
        if parent is not None:
            prefix = str(parent.started.get("prefix", ""))
            paths += [p for p in parent.started.get("path", [])
                      if prefix and str(p).startswith(prefix)]  # site-packages and the like
        paths += files
        stamp = []
        for path in paths:
            try:
                st = os.stat(path)
            except OSError:
                stamp.append((path, -1, -1))
                continue
            stamp.append((path, st.st_mtime_ns, st.st_size))
        return tuple(stamp)


def _interpreter(entry: EntryPoint, cwd: Path, env: Mapping[str, str]) -> str | None:
    """The interpreter's path as the cold spawn would find it."""
    python = entry.python
    if os.sep in python:
        path = cwd / python
        return str(path) if os.access(path, os.X_OK) else None
    return shutil.which(python, path=env.get("PATH", os.defpath))


__all__ = ["COLD", "WARM", "WarmOptions", "WarmPaths", "WarmSpawner"]
