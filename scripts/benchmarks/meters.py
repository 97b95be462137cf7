"""Process figures: RSS and CPU of given pids, of this process's reaped children, of the machine."""

from __future__ import annotations

import asyncio
import os
import resource
import time
from typing import Self

import psutil

MB = 1024 * 1024


def rss(pid: int) -> int:
    try:
        return int(psutil.Process(pid).memory_info().rss)
    except psutil.Error:
        return 0


def cpu_of(pid: int) -> float:
    try:
        t = psutil.Process(pid).cpu_times()
        return float(t.user + t.system)
    except psutil.Error:
        return 0.0


def cpu_ns_of(pid: int) -> float:
    """CPU seconds of a process's live threads, to the nanosecond where Linux says it
    (`/proc/PID/task/*/schedstat`); elsewhere `cpu_of` (clock ticks: 10 ms, which over a
    stream of a few hundred ms of CPU is a step of several per cent). A thread that ended
    takes its time with it: for processes whose threads live as long as they do."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return cpu_of(pid)
    total = 0
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/schedstat", "rb") as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            continue
    return total / 1e9


def cpu_seconds(pids: list[int]) -> float:
    return sum(cpu_of(pid) for pid in pids)


def busy_seconds() -> float:
    """CPU seconds the whole machine spent not idle, summed over all CPUs."""
    t = psutil.cpu_times()
    return float(sum(t) - t.idle - getattr(t, "iowait", 0.0))


def reaped_children_cpu() -> float:
    """CPU seconds of this process's descendants that have exited and were waited for."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def nproc() -> int:
    """What `nproc` prints: the CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 0


class RssSampler:
    """Samples the RSS of some pids every `interval` s in a task; keeps first, peak, last.

    The task is owned by the `with` block: cancelled on exit, then one last sample is taken.
    """

    def __init__(self, pids: dict[str, int], interval: float = 0.05) -> None:
        self.pids = pids
        self.interval = interval
        self.first = {name: rss(pid) for name, pid in pids.items()}
        self.peak = dict(self.first)
        self.last = dict(self.first)
        self.samples = 0
        self._task: asyncio.Task[None] | None = None

    def _sample(self) -> None:
        for name, pid in self.pids.items():
            value = rss(pid)
            self.last[name] = value
            self.peak[name] = max(self.peak[name], value)
        self.samples += 1

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            self._sample()

    def __enter__(self) -> Self:
        self._task = asyncio.get_running_loop().create_task(self._loop())
        return self

    def __exit__(self, *exc: object) -> None:
        if self._task is not None:
            self._task.cancel()
        self._sample()

    def mb(self) -> dict[str, dict[str, float]]:
        return {name: {"first": round(self.first[name] / MB, 1),
                       "peak": round(self.peak[name] / MB, 1),
                       "last": round(self.last[name] / MB, 1)} for name in self.pids}


class CpuMeter:
    """CPU seconds some pids (and this process) used between enter and exit."""

    def __init__(self, pids: dict[str, int]) -> None:
        self.pids = pids
        self.used: dict[str, float] = {}
        self.wall = 0.0

    def __enter__(self) -> Self:
        self._t0 = time.perf_counter()
        self._c0 = {name: cpu_of(pid) for name, pid in self.pids.items()}
        self._own0 = time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self._t0
        self.used = {name: cpu_of(pid) - self._c0[name] for name, pid in self.pids.items()}
        self.used["bench_client"] = time.process_time() - self._own0

    def pct(self) -> dict[str, float]:
        """% of one core, averaged over the window."""
        return {name: round(100 * s / self.wall, 1) if self.wall else 0.0
                for name, s in self.used.items()}


class Noise:
    """How much of the machine other people's work took while the benchmark ran.

    Our children count as ours: what the live trees had used when closed, or (better, once
    everything is reaped) the CPU of every descendant that was waited for, Hosts of past
    generations and processes started outside a Stack included.
    """

    def __init__(self) -> None:
        self.loadavg_before = os.getloadavg()[0]
        self.loadavg_after = self.loadavg_before
        self._busy0 = busy_seconds()
        self._own0 = time.process_time()
        self._reaped0 = reaped_children_cpu()
        self._t0 = time.perf_counter()
        self.duration = 0.0
        self.foreign_cores = 0.0

    def finish(self, children_cpu: float) -> None:
        """Close the window; `children_cpu`: what our closed stacks had used."""
        self.duration = time.perf_counter() - self._t0
        ours = max(children_cpu, reaped_children_cpu() - self._reaped0)
        foreign = max(0.0, (busy_seconds() - self._busy0)
                      - (time.process_time() - self._own0) - ours)
        self.foreign_cores = foreign / self.duration
        self.loadavg_after = os.getloadavg()[0]
