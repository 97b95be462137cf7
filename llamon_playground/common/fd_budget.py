"""How many client connections a process may hold open, from its open-files limit."""

from __future__ import annotations

import resource

RESERVED_FDS = 32  # the process's own: logs, locks, the event loop, the listening socket
MIN_CAP = 8


def connection_cap(configured: int) -> int:
    """`configured`, but at most half of what the open-files limit leaves: a relayed request
    holds a second descriptor, and the rest of the process needs its own."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return configured
    return max(MIN_CAP, min(configured, (soft - RESERVED_FDS) // 2))
