"""The one seam between the supervisor and how a generation's process comes to exist.

`ColdSpawner` starts the Host command as a new process (an interpreter starting from
nothing). `WarmSpawner` (spawn/warm.py) forks it from a warm parent that has the Host's
third-party modules imported already, and falls back to the cold spawn when it cannot.
Either way the supervisor gets a `HostProcess` and is told which way it came to be (the
`start_mode` and `start_reason` of `GET /host`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from llamon_playground.host_manager.environment import ENV_MARKER
from llamon_playground.host_manager.process import HostProcess, Output

WARM = "warm"
COLD = "cold"
# A program name that is a Python interpreter: python, python3, python3.12, pypy3 ...
PYTHON_NAME = re.compile(r"(python|pypy)[0-9.]*")


@dataclass(frozen=True)
class Launch:
    """A started Host process and how it was started."""

    process: HostProcess
    mode: str  # WARM | COLD
    reason: str  # a start_reason code (docs/host.md)
    marker: str  # what the process's own environment block carries under ENV_MARKER


class Spawner(Protocol):
    """How a Host generation's process comes to be: a new process (`ColdSpawner`) or a fork
    of a warm parent that has the project's third-party modules imported (spawn/warm.py).
    The supervisor calls `launch` for each generation and `close` once, at shutdown."""

    async def launch(self, argv: list[str], cwd: Path, env: Mapping[str, str],
                     on_output: Output) -> Launch:
        """Start `argv` in `cwd` with `env`, its output to `on_output(stream, bytes)`;
        the process, how it was started and why. OSError or HostUnavailable when it
        could not be."""

    def describe(self) -> dict[str, Any] | None:
        """The warm parent for `GET /host` (None when there is none)."""

    async def close(self) -> None:
        """Stop what the spawner keeps running (a warm parent)."""


class ColdSpawner:
    """Today's spawn: the Host command as a new process. `reason` says why it is cold."""

    async def launch(self, argv: list[str], cwd: Path, env: Mapping[str, str],
                     on_output: Output, *,
                     reason: str = "warm_start_disabled") -> Launch:
        return Launch(HostProcess(argv, cwd, env, on_output), COLD, reason, env[ENV_MARKER])

    def describe(self) -> dict[str, Any] | None:
        return None

    async def close(self) -> None:
        pass


@dataclass(frozen=True)
class EntryPoint:
    """`python -m module args...` or `python script.py args...`: what a fork can run."""

    python: str
    kind: str  # "module" | "script"
    target: str
    args: tuple[str, ...]
    argv0: str  # sys.argv[0] before runpy sets it


def entry_point(argv: list[str], cwd: Path) -> EntryPoint | None:
    """The Python entry point `argv` names, or None (a `uv run ...`, a binary, interpreter
    options a fork cannot reproduce): those are started cold."""
    if len(argv) < 2 or not PYTHON_NAME.fullmatch(os.path.basename(argv[0])):
        return None
    python = argv[0]
    if argv[1] == "-m" and len(argv) >= 3:
        return EntryPoint(python, "module", argv[2], tuple(argv[3:]), "-m")
    if argv[1].startswith("-"):
        return None
    script = str(cwd / argv[1])
    return EntryPoint(python, "script", script, tuple(argv[2:]), argv[1])
