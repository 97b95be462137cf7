"""The portable side of the platform seam: macOS, and Linux when forced
(`LLAMON_PLAYGROUND_FORCE_PORTABLE=1`, how CI keeps this side working).

- A child's exit: a thread blocked in `waitpid` for it (no polling, any POSIX system); the
  exit of a process that is not our child (a warm generation) through kqueue EVFILT_PROC
  where the system has it (macOS, the BSDs), otherwise through its parent's report.
- No death signal: the daemon's lifeline (host_manager/lifeline.py) and the warm parent's
  control socket end the Host tree when the daemon dies.
- The caller's uid: LOCAL_PEERCRED (macOS, FreeBSD: `struct xucred`), else SO_PEERCRED
  when the system has it under that name; neither: OSError (refused).
"""

from __future__ import annotations

import asyncio
import select
import socket
import struct
import subprocess
import sys
import threading
from collections.abc import Awaitable, Callable
from typing import Any

from llamon_playground.common.platform import PORTABLE, PlatformName

# struct xucred: u_int cr_version; uid_t cr_uid; short cr_ngroups; gid_t cr_groups[16]
XUCRED = struct.Struct("IIh16I")
XUCRED_VERSION = 0
SOL_LOCAL = 0  # macOS and FreeBSD: the level of LOCAL_* options
UCRED = struct.Struct("3i")  # struct ucred (Linux): pid, uid, gid


def _local_peercred() -> int | None:
    found = getattr(socket, "LOCAL_PEERCRED", None)
    if found is None and sys.platform == "darwin":
        found = 1  # <sys/un.h>; older Pythons do not export it
    return None if found is None else int(found)


def uid_from_xucred(raw: bytes) -> int:
    """The uid in a `struct xucred` answer; ValueError for another version."""
    version, uid = struct.unpack_from("II", raw)
    if version != XUCRED_VERSION:
        raise ValueError(f"struct xucred version {version}")
    return int(uid)


class PortablePlatform:
    """Exit through a waiting thread or kqueue, no death signal, getpeereid-style uids."""

    name: PlatformName = PORTABLE
    sees_other_exits = hasattr(select, "kqueue")

    def peer_uid(self, sock: socket.socket) -> int:
        local = _local_peercred()
        if local is not None:
            return uid_from_xucred(sock.getsockopt(SOL_LOCAL, local, XUCRED.size))
        peercred = getattr(socket, "SO_PEERCRED", None)
        if peercred is not None:
            _pid, uid, _gid = UCRED.unpack(sock.getsockopt(socket.SOL_SOCKET, peercred,
                                                           UCRED.size))
            return int(uid)
        raise OSError("this system tells no Unix socket peer's credentials")

    def die_with_parent(self) -> Callable[[], None] | None:
        return None

    def watch_exit(self, pid: int, on_exit: Callable[[], None]) -> Callable[[], None] | None:
        kqueue: Any = getattr(select, "kqueue", None)
        if kqueue is None:
            return None
        return _kqueue_watch(kqueue, pid, on_exit)

    def child_status(self, popen: subprocess.Popen[bytes]) -> Callable[[], Awaitable[int]]:
        loop = asyncio.get_running_loop()
        done: asyncio.Future[int] = loop.create_future()

        def settle(code: int) -> None:
            if not done.done():
                done.set_result(code)

        def wait() -> None:
            loop.call_soon_threadsafe(settle, popen.wait())

        # A daemon thread: it ends with its child, and never holds up the daemon's exit.
        threading.Thread(target=wait, name=f"waitpid-{popen.pid}", daemon=True).start()

        async def status() -> int:
            return await asyncio.shield(done)

        return status


def _kqueue_watch(kqueue: Any, pid: int,
                  on_exit: Callable[[], None]) -> Callable[[], None]:
    loop = asyncio.get_running_loop()
    kq = kqueue()
    closed = False

    def close() -> None:
        nonlocal closed
        if not closed:
            closed = True
            loop.remove_reader(kq.fileno())
            kq.close()

    def fired() -> None:
        close()
        on_exit()

    # getattr: the type checker runs on Linux, where `select` has no kqueue names.
    flags = getattr(select, "KQ_EV_ADD") | getattr(select, "KQ_EV_ONESHOT")  # noqa: B009
    event = getattr(select, "kevent")(pid, getattr(select, "KQ_FILTER_PROC"),  # noqa: B009
                                      flags, getattr(select, "KQ_NOTE_EXIT"))  # noqa: B009
    try:
        kq.control([event], 0, 0)
    except ProcessLookupError:  # exited before we looked
        kq.close()
        loop.call_soon(on_exit)
        return lambda: None
    loop.add_reader(kq.fileno(), fired)
    return close
