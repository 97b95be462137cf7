"""The long-lived processes' heap: what they allocate to start is kept out of the collector.

A daemon or a front lives for days, and what it allocated to start (modules, classes,
their constants: most of its objects) lives as long as it does. Python's full collection
walks every tracked object each time it runs, so it paused the daemon's loop mid-request
for up to 47 ms (the front's for 16 ms; measured over 600 run creations, `gc.callbacks`),
the tail of every latency the bench reports. Frozen after one collection, those objects
are never walked again; a full collection then walks only what came after.
"""

from __future__ import annotations

import gc


def freeze_startup_heap() -> None:
    """Collect once, then move every object that survived into the permanent generation.
    Called by the CLI just before a long-lived process starts serving (and by scripts/bench
    before it measures), never by a library function: a test process that starts a front
    in-process keeps its collector as it is."""
    gc.collect()
    gc.freeze()
