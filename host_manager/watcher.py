"""Watches the project's Host-relevant files and reports quiet-period batches of changes.

watchfiles does the OS-level watching; its filter (WatchRules.accepts) drops .venv/, .git/,
__pycache__/ and every unwatched file before we are woken. A burst of saves is grouped
until nothing changed for `quiet` seconds, then reported once. A folder that appears is
scanned: a file written into it before the OS watch covered it is reported too.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable

import watchfiles

from llamon_playground.host_manager.fingerprint import WatchRules

log = logging.getLogger(__name__)


class ProjectWatcher:
    def __init__(self, rules: WatchRules, on_changes: Callable[[set[str]], Awaitable[None]],
                 quiet: float) -> None:
        self._rules = rules
        self._on_changes = on_changes
        self._quiet = quiet
        self._queue: asyncio.Queue[set[str]] = asyncio.Queue()
        self._stop = asyncio.Event()

    def _filter(self, change: watchfiles.Change, path: str) -> bool:
        if change == watchfiles.Change.added and os.path.isdir(path):
            return self._rules.may_hold_watched(path)
        return self._rules.accepts(path)

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
        root = str(self._rules.project_dir)
        async for changes in watchfiles.awatch(root, watch_filter=self._filter, step=20,
                                               debounce=200, stop_event=self._stop,
                                               recursive=True):
            rels: set[str] = set()
            for change, path in changes:
                if change == watchfiles.Change.added and os.path.isdir(path):
                    # `mkdir -p d && echo x > d/c.md`: c.md may predate the folder's watch.
                    rels |= await asyncio.to_thread(self._rules.watched_under, path)
                elif (rel := self._rules.relative(path)) is not None:
                    rels.add(rel)
            if rels:
                self._queue.put_nowait(rels)

    async def _dispatch(self) -> None:
        while True:
            batch = await self._queue.get()
            while True:  # group until quiet
                try:
                    batch |= await asyncio.wait_for(self._queue.get(), self._quiet)
                except TimeoutError:
                    break
            try:
                await self._on_changes(batch)
            except Exception:  # a failed reaction must not end the watching
                log.exception("reacting to changes in %s failed", sorted(batch)[:5])


__all__ = ["ProjectWatcher"]
