"""The Host tree dies with the daemon, even when no daemon comes back (docs/host.md, "When
the daemon dies").

A small process per daemon that outlives it for that one job (the lifeline's reaper; not
`launch.Reaper`, which stops a generation the daemon itself ends). It holds the read end of a
lifeline pipe whose only write end is the daemon's: when a read answers EOF, the daemon is
gone, however it went (SIGKILL, a crash, the OOM killer), since the kernel closes a dead
process's descriptors. Then the reaper ends the whole Host tree, exactly as the next
daemon's boot reaping would (host_manager/orphans.py): the recorded Host's group, then
every process of ours carrying this project's tree marker, wherever it went (its own group,
its own session via setsid, re-parented to init). A daemon that stops cleanly stops its
Host itself and writes STAND_DOWN first: the reaper then exits without touching anything.

The core is pure pipe/EOF + signals + psutil (`watch`, `reap`): nothing Linux-only, so the
portable side of the platform seam (macOS: no PR_SET_PDEATHSIG, no pidfds) reuses it
unchanged. The warm parent's control socket is its lifeline in the same way (its only other
end is the daemon's): on EOF it ends its generations itself (spawn/preloader.py).

The daemon's end is `Lifeline`: `Lifeline.start` spawns the reaper with the pipe's read end as
its stdin, in a session of its own (a signal to the daemon's group, a terminal's Ctrl-C, does
not reach it), and keeps the only write end. The reaper waits as `/bin/sh` (`WAITER`: about
0.3 MB PSS where a waiting Python is 5 to 7 MB, and it waits as long as the daemon lives); on
EOF the shell execs `python -m llamon_playground.host_manager.lifeline RECORD_PATH` in its
place (same pid, same stdin), whose `main` reads the EOF and reaps. Run directly, that module
is the whole reaper (it waits with `watch` itself). That end is close-on-exec and never inherited: no
Host, warm parent or other child holds it, so the pipe reads EOF exactly when the daemon is
gone. `stand_down` is the clean stop.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, BinaryIO

log = logging.getLogger(__name__)

STAND_DOWN = b"stand-down\n"
# A process of the tree may fork while the first pass kills: a second pass finds its child.
PASSES = 2


def watch(lifeline: BinaryIO) -> bool:
    """Block until the daemon is gone (True) or stands the reaper down (False)."""
    while True:
        line = lifeline.readline()
        if not line:
            return True
        if line == STAND_DOWN:
            return False


def reap(record_path: Path) -> list[dict[str, Any]]:
    """End the Host tree the dead daemon left: its recorded Host's group, then every marked
    process. What was reaped, as `GET /host` lists it."""
    # Imported only now: the module run directly waits in `watch` for days with what reading
    # a pipe needs and no more (these bring psutil and asyncio, ~10 MB). Started by
    # `Lifeline`, the shell waits and this Python starts at EOF either way.
    from llamon_playground.host_manager.environment import ENV_MARKER, ENV_TREE
    from llamon_playground.host_manager.orphans import reap_marked, reap_orphan, tree_id
    reap_orphan(record_path, ENV_MARKER)
    reaped: list[dict[str, Any]] = []
    for _ in range(PASSES):
        reaped += reap_marked(ENV_TREE, tree_id(record_path), "daemon_died")
    return reaped


LIFELINE_MODULE = "llamon_playground.host_manager.lifeline"
# The waiting reaper: a POSIX shell reads the pipe a line at a time; a stand-down line ends it,
# EOF (the daemon gone) execs the Python reaper. $0 is the module (so `ps` names the reaper by
# it), $1 the Python, $2 the record. A partial last line is EOF too: the daemon writes only
# whole lines, in one write.
WAITER = (f'while IFS= read -r line; do [ "$line" = {STAND_DOWN.decode().strip()} ] && exit 0; '
          'done; exec "$1" -m "$0" "$2"')
EXIT_WAIT = 2.0


class Lifeline:
    """A running reaper and the write end of its pipe."""

    def __init__(self, process: subprocess.Popen[bytes], write_fd: int) -> None:
        self.process = process
        self._write_fd: int | None = write_fd

    @classmethod
    def start(cls, record_path: Path, env: dict[str, str]) -> Lifeline:
        """Spawn the reaper with the lifeline pipe's read end as its stdin; the daemon keeps the
        write end."""
        read_fd, write_fd = os.pipe()  # both close-on-exec (PEP 446)
        try:
            process = subprocess.Popen(
                ["/bin/sh", "-c", WAITER, LIFELINE_MODULE, sys.executable, str(record_path)],
                stdin=read_fd,
                stdout=subprocess.DEVNULL, env=env, start_new_session=True)
        except BaseException:
            os.close(write_fd)
            raise
        finally:
            os.close(read_fd)
        return cls(process, write_fd)

    def stand_down(self) -> None:
        """The Host is stopped: let the reaper go without reaping; wait for it briefly."""
        if self._write_fd is None:
            return
        try:
            os.write(self._write_fd, STAND_DOWN)
        except OSError:  # the reaper is gone already
            pass
        self.close()
        try:
            self.process.wait(EXIT_WAIT)
        except subprocess.TimeoutExpired:
            log.warning("the Host reaper (pid %d) did not exit", self.process.pid)

    def close(self) -> None:
        """Close the write end without standing down: the reaper reaps (a daemon that could
        not stop its Host cleanly)."""
        if self._write_fd is not None:
            os.close(self._write_fd)
            self._write_fd = None


def main(argv: list[str]) -> int:
    logging.basicConfig(level=logging.INFO, format="reaper: %(message)s")
    record_path = Path(argv[1])
    if watch(sys.stdin.buffer):
        reaped = reap(record_path)
        log.warning("the daemon died; ended %d process(es) of its Host tree", len(reaped))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
