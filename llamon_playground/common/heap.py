"""The long-lived processes' heap: what they allocate to start is kept out of the collector.

A daemon or a front lives for days, and what it allocated to start (modules, classes,
their constants: most of its objects) lives as long as it does. Python's full collection
walks every tracked object each time it runs, so it paused the daemon's loop mid-request
for up to 47 ms (the front's for 16 ms; measured over 600 run creations, `gc.callbacks`),
the tail of every latency the bench reports. Frozen after one collection, those objects
are never walked again; a full collection then walks only what came after.
"""

from __future__ import annotations

import ctypes
import functools
import gc
import sys


def freeze_startup_heap() -> None:
    """Collect once, then move every object that survived into the permanent generation.
    Called by the CLI just before a long-lived process starts serving (and by scripts/bench
    before it measures), never by a library function: a test process that starts a front
    in-process keeps its collector as it is."""
    gc.collect()
    gc.freeze()


def freeze_late_startup() -> None:
    """What a process's start imported after the CLI froze its heap (the daemon's
    OpenTelemetry SDK and its exporter, imported only when settings the daemon reads ask for
    export: 8,000 objects, 15,000 over gRPC) lives as long as the process too, so it is
    frozen with the rest. A no-op in a process whose heap was never frozen (a test's
    in-process daemon)."""
    if gc.get_freeze_count():
        freeze_startup_heap()


# glibc's mallopt parameter number (malloc.h): allocations at least this big get their own
# mmap, given back to the system the moment they are freed.
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 256 * 1024


@functools.cache
def _libc() -> ctypes.CDLL | None:
    """glibc, when this process runs on it (musl and other systems: None)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
    except OSError:
        return None
    return libc if hasattr(libc, "malloc_trim") and hasattr(libc, "mallopt") else None


def keep_large_buffers_apart() -> None:
    """Make every buffer of MMAP_THRESHOLD bytes or more an mmap of its own.

    glibc starts with such a threshold (128 KiB) but raises it, up to 32 MiB, each time a
    big mmapped buffer is freed; after one large request, the next request's 16 MiB body,
    its decoded text and its JSON then came from the heap, and a heap's top is given back
    only when nothing above it is still in use (a 16 MiB text part left the daemon 700 MB
    larger for good). Setting the threshold fixes it where it is. Called once by the CLI
    before a long-lived process serves; a no-op off glibc."""
    libc = _libc()
    if libc is not None:
        libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)


def give_back_memory() -> None:
    """After a large run or input: collect the cycles that still hold its objects, then ask
    glibc to return the free pages of its heaps (malloc_trim) so the process's RSS comes
    back to its idle size, not to its peak. A few milliseconds; a no-op off glibc."""
    gc.collect(1)  # the young generations: a large run's objects are recent
    libc = _libc()
    if libc is not None:
        libc.malloc_trim(0)
