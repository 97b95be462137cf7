"""When a Host exits on its own: restart now, after a back-off, or give up (crashloop)."""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field


@dataclass(frozen=True)
class CrashSettings:
    min_uptime: float = 5.0  # an exit sooner than this after Ready (or before it) is a crash
    backoff_base: float = 0.5
    backoff_cap: float = 15.0
    limit: int = 5  # this many crashes ...
    window: float = 60.0  # ... within this many seconds: crashloop


@dataclass
class CrashPolicy:
    settings: CrashSettings
    _crashes: deque[float] = field(default_factory=deque)
    consecutive: int = 0

    def on_exit(self, was_ready: bool, uptime: float, now: float | None = None
                ) -> float | None:
        """Delay before the automatic restart, or None for crashloop."""
        now = time.monotonic() if now is None else now
        if was_ready and uptime >= self.settings.min_uptime:
            self.consecutive = 0
            return 0.0  # it ran fine for a while: just bring it back
        self.consecutive += 1
        self._crashes.append(now)
        while self._crashes and now - self._crashes[0] > self.settings.window:
            self._crashes.popleft()
        if len(self._crashes) >= self.settings.limit:
            return None
        delay = self.settings.backoff_base * 2 ** (self.consecutive - 1)
        return float(min(delay, self.settings.backoff_cap))

    def reset(self) -> None:
        """An edit or an explicit start: the next crashes count from zero."""
        self._crashes.clear()
        self.consecutive = 0
