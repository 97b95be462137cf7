"""Whether the watcher holds an outside edit it has not applied yet.

From the moment a burst of changes to watched files reaches the watcher until its reaction
is over (the quiet period, the decision, the Host's restart), the edit is pending. A run
that is about to be sent waits for it to settle, then goes to the generation that has the
edit: sent at once, it would reach the generation about to be replaced and be failed
`runtime_restarted` a few tens of milliseconds later (`sed -i ... && llamon-playground
send`, or a Send pressed right after an editor's save).
"""

from __future__ import annotations

import asyncio


class PendingEdits:
    """Opened by the watcher when a burst of watched changes arrives, settled once its
    reaction is done; waited on by a run's restart phase."""

    def __init__(self) -> None:
        self._settled = asyncio.Event()
        self._settled.set()
        self._paths: frozenset[str] = frozenset()

    @property
    def paths(self) -> frozenset[str]:
        """The watched files the pending burst has changed so far (relative paths)."""
        return self._paths if self.pending else frozenset()

    @property
    def pending(self) -> bool:
        """An outside edit is noticed and not yet applied (or found to change nothing)."""
        return not self._settled.is_set()

    def open(self, paths: set[str]) -> None:
        """A burst of changes to watched files arrived, or more of the same burst."""
        self._paths = self._paths | paths if self.pending else frozenset(paths)
        self._settled.clear()

    def settle(self) -> None:
        """The burst was decided and the watcher's reaction (a restart, or none) is over."""
        self._paths = frozenset()
        self._settled.set()

    async def settled(self, timeout: float) -> bool:
        """Wait until no edit is pending, at most `timeout` s; whether it settled (an edit
        storm that never pauses keeps a burst open: the caller goes on without it)."""
        if not self.pending:
            return True
        try:
            await asyncio.wait_for(self._settled.wait(), timeout)
        except TimeoutError:
            return False
        return True


__all__ = ["PendingEdits"]
