"""A run's own Host log lines: its generation's, from the moment the run began.

"The last lines of the log" shows an earlier run's traceback beside a later run's failure
(same generation, or a Host that was replaced since). A run remembers the log offset it
began at; its diagnostics read from there, keeping its generation's lines only (a Host
that never got a generation, dying before it was ready, keeps every line of the window).
"""

from __future__ import annotations

from llamon_playground.host_manager.logs import HostLogs

# The ring holds at most this many lines; a window reads them all at most once.
MAX_WINDOW_LINES = 5000


def window_tail(logs: HostLogs, since: int, generation: int | None, count: int) -> list[str]:
    """The last `count` lines at or after offset `since`, of `generation` when it is known."""
    lines, _ = logs.after(since, MAX_WINDOW_LINES)
    own = [ln for ln in lines if generation is None or ln.generation == generation]
    return [f"[{ln.stream}] {ln.text}" for ln in own[-count:]]
