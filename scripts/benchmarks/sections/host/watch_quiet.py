"""What a shorter quiet period would cost: saves decided twice (a double restart).

The real watcher (host_manager/watch/watcher.py, watchfiles underneath) runs in this process
once per quiet period, all on the same project, and counts how many times each save is
decided. A save decided twice restarts the Host twice (the first time on a half-saved
file when the writes were not atomic), and a run sent between the two fails
`runtime_restarted`. The saves, a real tool or the writes an editor makes:

  sed_i          `sed -i` (a temporary file, renamed over the target)
  rename_write   an editor's safe write: the file renamed to a backup, written anew, its mode
                 set, the backup deleted (vim's default)
  in_place       truncate, write half, flush, write the rest (VS Code, nano, `>`)
  save_all       five files, each written to a temporary file and renamed over it
  format_after   a write, then a formatter started as a new process rewrites the file (a
                 format-on-save hook: the second write comes a process start later)

  watch_quiet.double_<W>ms       saves decided more than once with a `W` ms quiet period (%),
                                 every kind together; per kind in the notes  vs  no baseline
  watch_quiet.decided_ms         the default (50 ms) watcher: a save's last write to its
                                 decision, p50  vs  the quiet period itself
"""

from __future__ import annotations

import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from llamon_playground.host_manager.watch.fingerprint import WatchRules
from llamon_playground.host_manager.watch.watcher import ProjectWatcher, QuietPeriod
from scripts.benchmarks.configs import HostConfig
from scripts.benchmarks.figures import Figure, log, pct
from scripts.benchmarks.owned import Owned

WINDOWS_MS = (10, 20, 35, 50)
DEFAULT_MS = 50
LONGEST_S = 0.5
PAUSE_S = LONGEST_S + 0.25  # between two saves: never one burst
FILES = 5


class Decisions:
    """One watcher's decisions: (loop time, paths)."""

    def __init__(self) -> None:
        self.seen: list[tuple[float, set[str]]] = []

    async def __call__(self, paths: set[str]) -> None:
        self.seen.append((asyncio.get_running_loop().time(), paths))


def sed_i(files: list[Path], n: int) -> None:
    subprocess.run(["sed", "-i", f"s/^x = .*/x = {n}/", str(files[0])], check=True)


def rename_write(files: list[Path], n: int) -> None:
    target = files[0]
    backup = target.with_name(target.name + "~")
    os.replace(target, backup)
    with open(target, "w") as fh:
        fh.write(f"x = {n}\n" + "y = 1\n" * 200)
        fh.flush()
        os.fsync(fh.fileno())
    os.chmod(target, 0o644)
    backup.unlink()


def in_place(files: list[Path], n: int) -> None:
    text = f"x = {n}\n" + "y = 1\n" * 200
    with open(files[0], "w") as fh:
        fh.write(text[: len(text) // 2])
        fh.flush()
        fh.write(text[len(text) // 2:])


def save_all(files: list[Path], n: int) -> None:
    for path in files:
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(f"x = {n}\n")
        os.replace(tmp, path)


FORMATTER = ("import sys, pathlib; p = pathlib.Path(sys.argv[1]); "
             "p.write_text(' '.join(p.read_text().split()) + '\\n')")


def format_after(files: list[Path], n: int) -> None:
    files[0].write_text(f"x  =  {n}\n")
    subprocess.run([sys.executable, "-c", FORMATTER, str(files[0])], check=True)


KINDS: dict[str, Callable[[list[Path], int], None]] = {
    "sed_i": sed_i, "rename_write": rename_write, "in_place": in_place, "save_all": save_all,
    "format_after": format_after}


async def bench_watch_quiet(quick: bool, owned: Owned) -> list[Figure]:
    saves = 6 if quick else HostConfig.make(quick).restart_samples * 3
    project = owned.tmpdir("lpwq")
    (project / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    app = project / "app"
    app.mkdir()
    files = [app / f"m{i}.py" for i in range(FILES)]
    for path in files:
        path.write_text("x = 0\n")
    rules = WatchRules(project_dir=project, env_file=".env")
    decisions = {ms: Decisions() for ms in WINDOWS_MS}
    tasks = [asyncio.create_task(ProjectWatcher(lambda: rules, decisions[ms],
                                                QuietPeriod(ms / 1000, LONGEST_S)).run())
             for ms in WINDOWS_MS]
    loop = asyncio.get_running_loop()
    counts: dict[int, dict[str, list[int]]] = {ms: {k: [] for k in KINDS} for ms in WINDOWS_MS}
    decided_after: list[float] = []  # ms from a save's last write to the 50 ms decision
    try:
        await _watching(files[0], decisions)
        for n in range(saves):
            for kind, save in KINDS.items():
                marks = {ms: len(d.seen) for ms, d in decisions.items()}
                await asyncio.to_thread(save, files, n + 1)
                written = loop.time()
                await asyncio.sleep(PAUSE_S)
                for ms, d in decisions.items():
                    counts[ms][kind].append(len(d.seen) - marks[ms])
                new = decisions[DEFAULT_MS].seen[marks[DEFAULT_MS]:]
                if len(new) == 1:
                    decided_after.append((new[0][0] - written) * 1000)
            log(f"watch_quiet {n + 1}/{saves}: decisions per save at "
                + ", ".join(f"{ms} ms {sum(c[-1] for c in counts[ms].values())}"
                            for ms in WINDOWS_MS) + f" (over {len(KINDS)} saves)")
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        shutil.rmtree(project, ignore_errors=True)
    figures = []
    for ms in WINDOWS_MS:
        per_kind = {k: round(100 * sum(1 for c in v if c > 1) / len(v), 1)
                    for k, v in counts[ms].items()}
        missed = {k: sum(1 for c in v if c == 0) for k, v in counts[ms].items()}
        total = [c for v in counts[ms].values() for c in v]
        notes: dict[str, Any] = {"double_pct_by_kind": per_kind, "saves_per_kind": saves,
                                 "decisions_by_kind": counts[ms]}
        if any(missed.values()):
            notes["never_decided"] = missed
        figures.append(Figure(f"watch_quiet.double_{ms}ms",
                              100 * sum(1 for c in total if c > 1) / len(total), "%", None,
                              "no baseline: a share of the saves", None, notes))
    figures.append(Figure("watch_quiet.decided_ms", statistics.median(decided_after), "ms",
                          float(DEFAULT_MS), "the quiet period itself", None,
                          {"p90": round(pct(decided_after, 90), 1),
                           "samples": len(decided_after)}))
    return figures


async def _watching(probe: Path, decisions: dict[int, Decisions]) -> None:
    """Until every watcher has decided a probe save (watchfiles starts asynchronously)."""
    deadline = time.monotonic() + 30
    n = 0
    while not all(d.seen for d in decisions.values()):
        if time.monotonic() > deadline:
            raise RuntimeError("the watchers never reported the probe save")
        n += 1
        await asyncio.to_thread(probe.write_text, f"x = -{n}\n")
        await asyncio.sleep(0.3)
    await asyncio.sleep(PAUSE_S)
