"""Should a file change restart the Host? Only when the content of a watched file differs
from what the running generation started with; saving the same bytes again is no change.

The fingerprinter's (mtime, size) cache makes the repeated question cheap.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace

from llamon_playground.host_manager.state import HostState
from llamon_playground.host_manager.watch.fingerprint import (
    Fingerprint,
    Fingerprinter,
    WatchRules,
    differences,
)

log = logging.getLogger(__name__)

CRASHLOOP_CLEARED = "(crashloop cleared)"  # what an edit "changed" when it only ends a crashloop


def restart_wanted(state: HostState, changed: set[str]) -> bool:
    """The watcher's question. In crashloop any edit is worth a try; otherwise only a real
    change to a Host that runs or is about to (back-off)."""
    if state == HostState.CRASHLOOP:
        return True
    return bool(changed) and state in (HostState.READY, HostState.BACKOFF)


class ChangePolicy:
    """Answers "did the files a generation depends on change?" with cached hashes."""

    def __init__(self, rules: WatchRules) -> None:
        self.rules = rules
        self._fingerprinter = Fingerprinter(rules)

    def follow_env_file(self, env_file: str) -> None:
        """pyproject.toml names this env file now: watch it (and never hash it into
        history) instead of the previous one; the hashes cached so far stay valid."""
        if env_file != self.rules.env_file:
            log.info("env_file is now %s (was %s)", env_file, self.rules.env_file)
            self.rules = self._fingerprinter.rules = replace(self.rules, env_file=env_file)

    def digest(self, rel: str) -> str | None:
        """sha256 of a project file (None when it is gone). Blocking: reads the file."""
        return self._fingerprinter.hash_file(rel)

    async def fingerprint(self) -> Fingerprint:
        """The watched files now, scanned in a thread."""
        return await asyncio.to_thread(self._fingerprinter.scan)

    async def changed_since(self, fingerprint: Fingerprint) -> set[str]:
        """The watched files that differ from `fingerprint` now."""
        return differences(fingerprint, await self.fingerprint())

    async def saved_changes(self, saved: list[str], fingerprint: Fingerprint) -> list[str]:
        """Those of the saved files a generation with `fingerprint` depends on and that differ."""
        return await asyncio.to_thread(self._differing, saved, fingerprint)

    def _differing(self, saved: list[str], fingerprint: Fingerprint) -> list[str]:
        return [rel for rel in saved
                if self.rules.is_watched(rel) and self.digest(rel) != fingerprint.get(rel)]
