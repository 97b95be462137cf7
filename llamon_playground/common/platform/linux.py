"""The Linux side of the platform seam: what the product was built on (pidfd, PDEATHSIG,
SO_PEERCRED). Each Linux-only call is looked up when used, never at import."""

from __future__ import annotations

import asyncio
import ctypes
import os
import signal
import socket
import struct
import subprocess
from collections.abc import Awaitable, Callable

from llamon_playground.common.platform import LINUX, PlatformName

PR_SET_PDEATHSIG = 1
UCRED = struct.Struct("3i")  # struct ucred: pid, uid, gid


def die_with_parent() -> None:
    # Runs in the child between fork and exec. PDEATHSIG fires when the forking *thread*
    # dies, so the spawn must happen on the event-loop thread (it does: no executor).
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


class LinuxPlatform:
    """pidfd for exits, PDEATHSIG for children, SO_PEERCRED for callers."""

    name: PlatformName = LINUX
    sees_other_exits = True

    def peer_uid(self, sock: socket.socket) -> int:
        _pid, uid, _gid = UCRED.unpack(sock.getsockopt(
            socket.SOL_SOCKET, socket.SO_PEERCRED, UCRED.size))
        return int(uid)

    def die_with_parent(self) -> Callable[[], None] | None:
        return die_with_parent

    def watch_exit(self, pid: int, on_exit: Callable[[], None]) -> Callable[[], None] | None:
        # The kernel says when the process itself exits: never a pipe's EOF (a grandchild
        # holding stdout would hide the death for ever, CPython gh-119710).
        loop = asyncio.get_running_loop()
        pidfd = os.pidfd_open(pid)
        closed = False

        def close() -> None:
            nonlocal closed
            if not closed:
                closed = True
                loop.remove_reader(pidfd)
                os.close(pidfd)

        def fired() -> None:
            close()
            on_exit()

        loop.add_reader(pidfd, fired)
        return close

    def child_status(self, popen: subprocess.Popen[bytes]) -> Callable[[], Awaitable[int]]:
        async def status() -> int:
            return popen.wait()  # asked once the pidfd fired: the child is a zombie already

        return status
