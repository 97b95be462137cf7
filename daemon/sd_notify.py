"""systemd's notify protocol, in the few lines it needs (no dependency).

The unit is `Type=notify` with `NotifyAccess=main`: the daemon itself sends READY=1 once its
socket listens and boot recovery is done, STOPPING=1 when it starts shutting down, and
WATCHDOG=1 from its event loop at half of WatchdogSec, so a wedged loop gets restarted.
Outside systemd (no NOTIFY_SOCKET) every call is a no-op.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket

from llamon_playground.common.config import Settings

log = logging.getLogger(__name__)

# How long READY=1 and STOPPING=1 may wait for room in systemd's queue; a watchdog ping does
# not wait (the next one comes half a timeout later).
SEND_WAIT = 1.0


class Notifier:
    """Tells systemd the daemon is ready, stopping or still alive; without NOTIFY_SOCKET every
    call is a no-op, so callers never check whether they run under systemd."""

    def __init__(self, address: str | None, watchdog_usec: int = 0,
                 watchdog_pid: int | None = None) -> None:
        # "@name" is an abstract socket; systemd passes it that way.
        self._address = "\0" + address[1:] if address and address.startswith("@") else address
        self._watchdog_usec = watchdog_usec
        self._watchdog_pid = watchdog_pid
        self._behind = False  # the last send found systemd's queue full (said once a spell)

    @classmethod
    def from_settings(cls, settings: Settings) -> Notifier:
        return cls(settings.notify_socket, settings.watchdog_usec, settings.watchdog_pid)

    def send(self, *assignments: str, wait: float = SEND_WAIT) -> bool:
        """Send `KEY=VALUE` lines in one datagram; False when there is nowhere to send or
        systemd's queue stayed full for `wait` seconds (0: do not wait at all)."""
        if not self._address:
            return False
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
                # A datagram socket's sendto blocks while the receiver's queue is full (ten
                # datagrams by default): the daemon's loop must never wait on systemd for long.
                sock.settimeout(wait)
                sock.sendto("\n".join(assignments).encode(), self._address)
        except (BlockingIOError, TimeoutError):
            if not self._behind:
                log.warning("sd_notify to %r: systemd is not reading; %s dropped",
                            self._address, assignments[0])
            self._behind = True
            return False
        except OSError as exc:  # systemd went away or the path is wrong: say so, go on
            log.warning("sd_notify to %r failed: %s", self._address, exc)
            return False
        self._behind = False
        return True

    def ready(self, status: str) -> bool:
        return self.send("READY=1", f"STATUS={status}", f"MAINPID={os.getpid()}")

    def stopping(self) -> bool:
        return self.send("STOPPING=1", "STATUS=stopping")

    @property
    def watchdog_interval(self) -> float | None:
        """Seconds between WATCHDOG=1 pings (half the timeout), None when not watched."""
        if not self._address or self._watchdog_usec <= 0:
            return None
        if self._watchdog_pid is not None and self._watchdog_pid != os.getpid():
            return None  # the watchdog is meant for another process of the unit
        return self._watchdog_usec / 2 / 1_000_000

    async def watchdog_loop(self) -> None:
        """Ping from the event loop itself: if the loop stalls, the pings stop."""
        interval = self.watchdog_interval
        if interval is None:
            return
        while True:
            self.send("WATCHDOG=1", wait=0)
            await asyncio.sleep(interval)
