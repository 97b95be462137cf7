"""The platform seam: the few things the Host manager and the daemon's socket checks need
from the operating system, behind one interface with two sides (docs/operations.md,
"Platforms").

- `linux` (linux.py): a pidfd per Host process, PR_SET_PDEATHSIG on every child, the
  caller's uid through SO_PEERCRED.
- `portable` (portable.py; macOS, and Linux when `LLAMON_PLAYGROUND_FORCE_PORTABLE=1`): a
  child's exit through a thread blocked in waitpid (kqueue EVFILT_PROC, where it exists, for
  a process that is not ours), no death signal (the lifeline's reaper and the warm parent's
  control socket end the Host tree instead), the uid through LOCAL_PEERCRED or whatever
  the system offers.

Nothing Linux-only is touched at import time: each side looks its calls up when used.

May import: nothing
"""

from __future__ import annotations

import functools
import os
import socket
import subprocess
import sys
from collections.abc import Awaitable, Callable, Mapping
from typing import Literal, Protocol

ENV_FORCE_PORTABLE = "LLAMON_PLAYGROUND_FORCE_PORTABLE"
PlatformName = Literal["linux", "portable"]
LINUX: PlatformName = "linux"
PORTABLE: PlatformName = "portable"
WINDOWS_REFUSAL = ("llamon-playground does not run natively on Windows: run it inside WSL2 "
                   "(Linux), where it is supported")


class Platform(Protocol):
    """One side of the seam."""

    name: PlatformName
    sees_other_exits: bool  # `watch_exit` works for a process that is not our child

    def peer_uid(self, sock: socket.socket) -> int:
        """The uid of the process at the other end of a connected Unix socket; OSError when
        the system cannot say (a caller then refuses the connection)."""

    def die_with_parent(self) -> Callable[[], None] | None:
        """A `preexec_fn` that ties a child to the daemon's life, or None when the platform
        has none (the lifeline ends the tree instead)."""

    def watch_exit(self, pid: int, on_exit: Callable[[], None]) -> Callable[[], None] | None:
        """Call `on_exit` on the running loop once `pid` (any process of ours) has exited;
        the returned callable stops watching. None when this platform cannot see that
        process's exit by itself: its status, awaited, is the only sign."""

    def child_status(self, popen: subprocess.Popen[bytes]) -> Callable[[], Awaitable[int]]:
        """How to await the exit status of our own child (started just now)."""


def choose(environ: Mapping[str, str], system: str) -> Platform:
    """The side for `system` (a `sys.platform` value) and `environ`."""
    from llamon_playground.common.platform import linux, portable

    forced = environ.get(ENV_FORCE_PORTABLE, "").strip().lower() in ("1", "true", "yes", "on")
    if system.startswith("linux") and not forced:
        return linux.LinuxPlatform()
    return portable.PortablePlatform()


@functools.cache
def current() -> Platform:
    """The side this process runs (chosen once: the environment of its start)."""
    return choose(os.environ, sys.platform)


@functools.cache
def unix_seqpacket() -> bool:
    """Whether Unix sockets of type SOCK_SEQPACKET exist here (Linux: yes; macOS: no). The
    stream hand-over and the warm parent's control socket need them; without them the front
    relays every answer and each Host starts cold."""
    kind = getattr(socket, "SOCK_SEQPACKET", None)
    if kind is None:
        return False
    try:
        a, b = socket.socketpair(socket.AF_UNIX, kind)
    except OSError:
        return False
    a.close()
    b.close()
    return True


def refusal(system: str) -> str | None:
    """The one line a command prints instead of starting on an unsupported system."""
    return WINDOWS_REFUSAL if system.startswith(("win32", "cygwin")) else None


__all__ = ["ENV_FORCE_PORTABLE", "LINUX", "PORTABLE", "Platform", "PlatformName", "choose",
           "current", "refusal",
           "unix_seqpacket"]
