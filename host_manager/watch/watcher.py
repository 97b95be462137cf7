"""Watches the project's Host-relevant files and reports each burst of changes once.

watchfiles does the OS-level watching, of each project folder on its own: .venv/, .git/,
__pycache__/, the history under .llamon/ and the other tool folders are not watched at all
(their writes never wake us). A burst of saves is grouped until it has been
quiet for a while, then reported once (see QuietPeriod). A folder that appears is scanned:
a file written into it before the OS watch covered it is reported too.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass

import watchfiles

from llamon_playground.host_manager.watch.fingerprint import IGNORED_DIRS, WatchRules
from llamon_playground.host_manager.watch.pending import PendingEdits

log = logging.getLogger(__name__)

RETRY_MAX = 5.0  # between attempts to watch when the folders keep failing to be watched
# A file's ctime comes from the kernel's coarse clock (a tick, up to 4 ms, behind): a
# burst's last change is taken as that much later, so the quiet is never cut short.
CLOCK_SLACK = 0.005


def last_change(paths: Iterable[str]) -> float | None:
    """When the latest change to `paths` happened (wall clock): a file's ctime (a write, a
    rename onto it, a chmod), its folder's mtime (a file created, deleted or renamed there:
    all a deleted file leaves). None when none of them can be read. Blocking: stats."""
    latest = None
    folders: set[str] = set()
    for path in paths:
        folders.add(os.path.dirname(path))
        try:
            latest = max(latest or 0.0, os.stat(path).st_ctime)
        except OSError:
            pass  # gone: its folder says when
    for folder in folders:
        try:
            latest = max(latest or 0.0, os.stat(folder).st_mtime)
        except OSError:
            pass
    return latest


@dataclass(frozen=True)
class QuietPeriod:
    """How long a burst must be quiet before it is reported: it grows with the burst.

    A single save (an editor's write, rename and chmod land within a few ms) is decided
    after `shortest`, so save -> restart stays in tens of milliseconds. A burst that has
    already lasted `elapsed` seconds (a formatter over the tree, a branch checkout, an
    editor storm) waits `shortest + elapsed`, up to `longest`: the longer the storm, the
    longer a pause it takes to end it, so one storm gives one restart.
    """

    shortest: float
    longest: float

    def after(self, elapsed: float) -> float:
        """The quiet a burst that has lasted `elapsed` s must keep before it is reported."""
        return max(self.shortest, min(self.longest, self.shortest + elapsed))


class ProjectWatcher:
    """Reports each quiet-ended burst of changes to watched files to `on_changes` once.

    `rules` gives the current WatchRules: they change when pyproject.toml renames the env
    file, and every decision reads the latest. `pending` is open from a burst's first
    watched change until `on_changes` has reacted to it (a run waits for it to settle)."""

    def __init__(self, rules: Callable[[], WatchRules],
                 on_changes: Callable[[set[str]], Awaitable[None]], quiet: QuietPeriod,
                 pending: PendingEdits | None = None) -> None:
        self._rules = rules
        self._on_changes = on_changes
        self._quiet = quiet
        self._pending = pending or PendingEdits()
        self._root = str(rules().project_dir)
        # (loop time of its last change, watched relative paths, every path it touched)
        self._queue: asyncio.Queue[tuple[float, set[str], frozenset[str]]] = asyncio.Queue()
        self._stop = asyncio.Event()

    def _noticed(self, change: watchfiles.Change, path: str) -> bool:
        """Any change outside the tool folders (.venv/, .git/, __pycache__/...): watched
        files open a burst; the others only keep an open burst going (an editor's swap and
        backup files, a formatter's temp files are part of the same storm)."""
        rel = path[len(self._root) + 1:] if path.startswith(self._root) else path
        return not any(part in IGNORED_DIRS for part in rel.split(os.sep))

    async def run(self) -> None:
        """Watch until cancelled; the blocking watch is told to stop before we re-raise."""
        reader = asyncio.create_task(self._read())
        try:
            await self._dispatch()
        finally:
            self._stop.set()
            reader.cancel()
            await asyncio.gather(reader, return_exceptions=True)

    async def _read(self) -> None:
        """Watch every folder of the project except the tool folders, each on its own
        (not one recursive watch of the root): the history under .llamon/ is written with
        every streamed token, and a recursive watch woke us (and watchfiles' threads) on
        each of those writes only to filter them out. A folder that appears is added by
        watching afresh: the new set of folders is walked, watched, then walked again, so
        a folder made in between is never missed, and the files already in new folders
        are reported."""
        loop = asyncio.get_running_loop()
        watched: set[str] = set()
        failures = 0
        while not self._stop.is_set():
            folders = await asyncio.to_thread(self._folders)
            stop = asyncio.Event()  # this watch's own: a restart must not stop the next one
            # watchfiles yields ~10 ms (step) after the last change, and at least every
            # ~20-30 ms (debounce, checked each step) while changes keep coming: well under
            # the shortest quiet period (50 ms), so a continuous storm reaches us as batches
            # closer together than the quiet period even when this loop is a little late.
            # (With 30 ms the margin at a burst's start was ~10 ms, and a loaded machine
            # could split a storm in two.)
            changes = watchfiles.awatch(*sorted(folders), watch_filter=self._noticed, step=10,
                                        debounce=20, stop_event=stop, recursive=False,
                                        ignore_permission_denied=True)
            # Its first step puts the OS watches in place, then waits in a thread.
            pending: asyncio.Future[set[tuple[watchfiles.Change, str]] | None] = \
                asyncio.ensure_future(anext(changes, None))
            try:
                await asyncio.sleep(0)
                if pending.done() and pending.exception() is not None:
                    raise pending.exception()  # type: ignore[misc]
                after = await asyncio.to_thread(self._folders)
                new = (folders | after) - watched if watched else after - folders
                if new:
                    rels: set[str] = set()
                    for folder in sorted(new):
                        rels |= await asyncio.to_thread(self._rules().watched_under, folder)
                    self._queue.put_nowait((loop.time(), rels, frozenset()))
                watched = folders
                if after - folders:
                    continue  # made while the watch started: watch again, with it
                failures = 0
                while True:
                    batch = await pending
                    if batch is None:
                        return  # stopped
                    arrived, now = loop.time(), time.time()
                    rels, grown = await self._relative(batch)
                    paths = frozenset(p for _, p in batch)
                    # Timed by the change itself, not by its arrival here (watchfiles hands
                    # a batch over 10-20 ms after it, once a step saw no more): the quiet
                    # period then counts from the last write, and an outside edit is
                    # decided that much sooner (the burst checks its files once more
                    # before it ends: a write still on its way here extends it).
                    changed = await asyncio.to_thread(last_change, paths)
                    self._queue.put_nowait((self._loop_time(changed, arrived, now), rels,
                                            paths))
                    if grown:
                        break  # a new folder: watch afresh, with it
                    pending = asyncio.ensure_future(anext(changes, None))
            except OSError as exc:  # a folder went away between the walk and the watch
                failures += 1
                log.debug("watching again: %s", exc)
                if failures > 1:  # not a race: do not spin on it
                    await asyncio.sleep(min(RETRY_MAX, 0.05 * 2 ** failures))
            finally:
                stop.set()  # the watching thread returns within a step
                if not pending.done():
                    pending.cancel()
                await asyncio.gather(pending, return_exceptions=True)
                await changes.aclose()

    def _folders(self) -> set[str]:
        """The project folder and every folder under it outside the tool folders."""
        found = {self._root}
        for dirpath, dirnames, _ in os.walk(self._root):
            dirnames[:] = [d for d in dirnames if d not in IGNORED_DIRS]
            found.update(os.path.join(dirpath, d) for d in dirnames)
        return found

    async def _relative(self, changes: set[tuple[watchfiles.Change, str]]
                        ) -> tuple[set[str], bool]:
        """The watched files among `changes`, and whether a folder to watch appeared."""
        rels: set[str] = set()
        grown = False
        for change, path in changes:
            # One stat per added path, on the watcher's own batch; watched_under walks in a thread.
            if change == watchfiles.Change.added and os.path.isdir(path):  # noqa: ASYNC240
                # `mkdir -p d && echo x > d/c.md`: c.md may predate the folder's watch.
                if self._rules().may_hold_watched(path):
                    rels |= await asyncio.to_thread(self._rules().watched_under, path)
                    grown = True
            elif ((rel := (rules := self._rules()).relative(path)) is not None
                  and rules.is_watched(rel)):
                rels.add(rel)
        return rels, grown

    @staticmethod
    def _loop_time(changed: float | None, arrived: float, now: float) -> float:
        """The loop time of a change at wall time `changed` (never after its arrival)."""
        if changed is None:
            return arrived
        return min(arrived, arrived - (now - changed) + CLOCK_SLACK)

    async def _dispatch(self) -> None:
        began = last = -float("inf")
        while True:
            at, batch, paths = await self._queue.get()
            # Changes that kept coming while the previous batch was handled (a restart takes
            # a few hundred ms) belong to the same burst: its clock keeps running.
            if at - last > self._quiet.longest:
                began = at
            last = max(last, at)
            if not batch:
                continue  # activity without a watched change opens no burst
            self._pending.open(batch)
            try:
                last = await self._decide(batch, set(paths), began, last)
            finally:
                self._pending.settle()

    async def _decide(self, batch: set[str], paths: set[str], began: float,
                      last: float) -> float:
        """Group the burst until it has been quiet long enough since its last change, then
        react to it once; when its last change was (loop time)."""
        loop = asyncio.get_running_loop()
        peeked: float | None = None  # the burst's files' last change (wall) at the last look
        while True:  # group until quiet
            left = last + self._quiet.after(last - began) - loop.time()
            try:
                if left > 0:
                    at, more, touched = await asyncio.wait_for(self._queue.get(), left)
                else:
                    at, more, touched = self._queue.get_nowait()
            except (TimeoutError, asyncio.QueueEmpty):
                # Quiet since the last change that reached us; one that has not yet (still
                # in watchfiles' step) shows in the burst's files and folders.
                arrived, now = loop.time(), time.time()
                wall = await asyncio.to_thread(last_change, paths)
                changed = self._loop_time(wall, arrived, now)
                # (A time that does not move, a file dated ahead of the clock, ends it.)
                if wall is None or wall == peeked or changed <= last + CLOCK_SLACK:
                    break
                peeked = wall
                at, more, touched = changed, set(), frozenset()
            last = max(last, at)
            batch |= more
            paths |= touched
            self._pending.open(more)
        log.debug("burst of %d paths decided: %.0f ms long, %.0f ms after its last change",
                  len(batch), (last - began) * 1000, (loop.time() - last) * 1000)
        try:
            await self._on_changes(batch)
        except Exception:  # a failed reaction must not end the watching
            log.exception("reacting to changes in %s failed", sorted(batch)[:5])
        return last


__all__ = ["ProjectWatcher", "QuietPeriod", "last_change"]
