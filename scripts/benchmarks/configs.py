"""Every knob of the benchmark, full and `--quick`; the JSON report quotes them as they ran."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class CoreConfig:
    """store_append, sse_front_vs_direct, delta_latency, run_create_202, request_relay."""

    quick: bool
    store_events: int = 100_000
    store_burst: int = 1000
    store_reps: int = 5
    sse_events: int = 100_000
    # One replay takes ~35 ms here, so one scheduling hiccup moves it by a tenth: the median
    # of seven (five when quick) is the figure, at a cost of a quarter of a second.
    sse_reps: int = 7
    latency_words: int = 2000
    chunk_delay_ms: int = 2
    create_samples: int = 300
    relay_requests: int = 2000
    relay_concurrency: int = 8
    relay_reps: int = 5

    @classmethod
    def make(cls, quick: bool) -> CoreConfig:
        if quick:
            # 1,000 requests a rep, not fewer: at ~5,000/s a shorter rep is over within one
            # scheduling hiccup of these two cores.
            return cls(quick=True, store_reps=2, sse_reps=5, latency_words=400,
                       create_samples=20, relay_requests=1000, relay_reps=3)
        return cls(quick=False)


@dataclass(frozen=True)
class HostConfig:
    """host_restart, daemon_idle_cpu, daemon_rss."""

    restart_samples: int = 7
    idle_s: float = 30.0
    idle_files: int = 10_000
    settle_s: float = 2.0

    @classmethod
    def make(cls, quick: bool) -> HostConfig:
        return cls(restart_samples=2, idle_s=10.0, settle_s=1.0) if quick else cls()


@dataclass(frozen=True)
class LoadConfig:
    """sse_fanout_200, history_1m, replay_100k, slow_client."""

    fanout_clients: int = 200
    fanout_words: int = 3000
    fanout_delay_ms: int = 1
    fanout_reps: int = 2
    connect_wave: int = 25
    history_runs: int = 1000
    history_events_per_run: int = 1000
    history_requests: int = 200
    replay_events: int = 100_000
    replay_reps: int = 3
    slow_words: int = 8000
    slow_delay_ms: int = 0
    slow_read_s: float = 10.0
    slow_normal_clients: int = 5
    slow_rcvbuf: int = 4096
    slow_controls: int = 2

    @classmethod
    def make(cls, quick: bool) -> LoadConfig:
        if quick:
            return cls(fanout_words=1000, fanout_reps=1, history_requests=60, replay_reps=2,
                       slow_words=3000, slow_read_s=4.0, slow_controls=1)
        return cls()


def as_json(quick: bool) -> dict[str, Any]:
    """The "config" entry of the JSON report."""
    return {**vars(CoreConfig.make(quick)),
            "sections": {"host": vars(HostConfig.make(quick)),
                         "load": vars(LoadConfig.make(quick))}}
