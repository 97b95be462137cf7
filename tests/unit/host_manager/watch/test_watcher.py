"""The watcher's grouping: a quiet period that grows with the burst, on real files."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from llamon_playground.host_manager.watch.fingerprint import WatchRules
from llamon_playground.host_manager.watch.pending import PendingEdits
from llamon_playground.host_manager.watch.watcher import ProjectWatcher, QuietPeriod, last_change
from tests.support.waiting import eventually


@pytest.mark.parametrize(("elapsed", "quiet"), [
    (0.0, 0.05), (0.01, 0.06), (0.2, 0.25), (0.45, 0.5), (3.0, 0.5), (-1.0, 0.05)])
def test_the_quiet_period_grows_with_the_burst_up_to_the_longest(elapsed: float,
                                                                  quiet: float) -> None:
    assert QuietPeriod(0.05, 0.5).after(elapsed) == pytest.approx(quiet)


def test_the_longest_never_undercuts_the_shortest() -> None:
    assert QuietPeriod(0.3, 0.1).after(5.0) == pytest.approx(0.3)


def test_a_change_is_dated_by_the_file_or_what_it_left_in_its_folder(tmp_path: Path) -> None:
    folder, other = tmp_path / "app", tmp_path / "lib"
    folder.mkdir()
    other.mkdir()
    kept = folder / "a.py"
    kept.write_text("a = 1\n")
    os.utime(folder, (1_000, 1_000))  # the folder's last entry change: long ago
    os.chmod(kept, 0o600)  # a chmod (or a rename onto the file) dates it by its ctime
    assert last_change([str(kept)]) == os.stat(kept).st_ctime
    gone = other / "tmp.swp"
    gone.write_text("x")
    gone.unlink()  # a deleted file leaves only its folder's mtime
    assert last_change([str(gone)]) == os.stat(other).st_mtime
    assert last_change([str(tmp_path / "nowhere" / "x.py")]) is None


class Batches:
    def __init__(self) -> None:
        self.seen: list[set[str]] = []
        self.arrived = asyncio.Event()

    async def __call__(self, paths: set[str]) -> None:
        self.seen.append(paths)
        self.arrived.set()


async def watching(project: Path, quiet: QuietPeriod, batches: Batches,
                   ready_probe: Path) -> asyncio.Task[None]:
    """Start the watcher and wait until it demonstrably sees changes (a probe batch)."""
    rules = WatchRules(project_dir=project, env_file=".env")
    task = asyncio.create_task(ProjectWatcher(lambda: rules, batches, quiet).run())
    for _ in range(200):  # watchfiles starts asynchronously: save until a batch arrives
        ready_probe.write_text(f"# probe {_}\n")
        try:
            await asyncio.wait_for(batches.arrived.wait(), 0.25)
            break
        except TimeoutError:
            continue
    else:
        task.cancel()
        raise AssertionError("the watcher never reported the probe")
    await wait_settled(batches)
    batches.seen.clear()
    batches.arrived.clear()
    return task


async def wait_settled(batches: Batches, quiet_for: float = 0.8) -> None:
    """No further batch for `quiet_for` s: everything written so far is reported."""
    while True:
        batches.arrived.clear()
        try:
            await asyncio.wait_for(batches.arrived.wait(), quiet_for)
        except TimeoutError:
            return


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "app").mkdir()
    return tmp_path


async def test_a_long_burst_with_a_pause_is_still_one_batch(project: Path) -> None:
    batches = Batches()
    # After 0.6 s of saves the burst needs 0.15 + 0.6 s of quiet to end, so the 0.35 s
    # pause below does not split it (a fixed 0.15 s quiet period would have).
    task = await watching(project, QuietPeriod(0.15, 2.0), batches, project / "app" / "probe.py")
    try:
        for i in range(30):  # spacing the writes is input, not synchronisation
            (project / "app" / f"m{i % 3}.py").write_text(f"x = {i}\n")
            await asyncio.sleep(0.02)
        await asyncio.sleep(0.35)
        (project / "app" / "late.py").write_text("late = 1\n")
        (project / "notes.txt").write_text("not watched\n")
        await asyncio.wait_for(batches.arrived.wait(), 10)
        await wait_settled(batches)
        assert batches.seen == [{"app/m0.py", "app/m1.py", "app/m2.py", "app/late.py"}]
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_separate_saves_after_a_pause_are_separate_batches(project: Path) -> None:
    batches = Batches()
    task = await watching(project, QuietPeriod(0.05, 0.5), batches, project / "app" / "probe.py")
    try:
        (project / "app" / "a.py").write_text("a = 1\n")
        await asyncio.wait_for(batches.arrived.wait(), 10)
        await wait_settled(batches)
        (project / "app" / "b.py").write_text("b = 1\n")
        await asyncio.wait_for(batches.arrived.wait(), 10)
        await wait_settled(batches)
        assert batches.seen == [{"app/a.py"}, {"app/b.py"}]
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_an_edit_is_pending_from_its_notice_until_its_reaction_is_over(
        project: Path) -> None:
    pending = PendingEdits()
    reacting = asyncio.Event()
    release = asyncio.Event()
    reacted: list[set[str]] = []

    async def on_changes(paths: set[str]) -> None:
        reacted.append(paths)
        reacting.set()
        await release.wait()  # the Host's restart, as long as the test wants

    rules = WatchRules(project_dir=project, env_file=".env")
    task = asyncio.create_task(ProjectWatcher(lambda: rules, on_changes,
                                              QuietPeriod(0.05, 0.5), pending).run())
    try:
        async def save() -> frozenset[str]:
            (project / "app" / "a.py").write_text(f"a = {len(reacted)}\n")
            await asyncio.sleep(0)
            return pending.paths
        # watchfiles starts asynchronously: save until the watcher has noticed one.
        await eventually(save, lambda paths: paths == {"app/a.py"},
                         "the watcher to hold the save as pending", interval=0.2)
        await asyncio.wait_for(reacting.wait(), 10)
        assert pending.pending and pending.paths == {"app/a.py"}  # decided, not applied yet
        assert not await pending.settled(0.01)
        release.set()
        assert await pending.settled(10)
        assert pending.paths == frozenset()
    finally:
        release.set()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_waiting_for_a_pending_edit_ends_when_it_settles() -> None:
    pending = PendingEdits()
    assert await pending.settled(0)  # nothing pending: no wait
    pending.open({"app/a.py"})
    pending.open({"app/b.py"})  # more of the same burst
    assert pending.paths == {"app/a.py", "app/b.py"}
    waiter = asyncio.create_task(pending.settled(10))
    await asyncio.sleep(0)
    assert not waiter.done()
    pending.settle()
    assert await waiter and not pending.pending
    pending.open({"app/c.py"})  # a next burst starts afresh
    assert pending.paths == {"app/c.py"}


ROUNDS = 12


async def watching_edits(project: Path, seen: set[str], probe: str) -> asyncio.Task[None]:
    """A watcher that adds what it reports to `seen`, started and shown to be up: it has
    reported an edit of `probe` (edits before the watch is up go unseen)."""

    async def on_changes(paths: set[str]) -> None:
        seen.update(paths)

    rules = WatchRules(project)
    watcher = asyncio.create_task(ProjectWatcher(lambda: rules, on_changes,
                                                 QuietPeriod(0.05, 0.5)).run())
    edits = iter(range(1_000_000))

    async def edit() -> set[str]:
        (project / probe).write_text(f"x = {next(edits)}\n")
        await asyncio.sleep(0)
        return seen
    try:
        await eventually(edit, lambda s: probe in s, f"the watcher to report an edit of {probe}",
                         interval=0.2)
    except BaseException:
        watcher.cancel()
        await asyncio.gather(watcher, return_exceptions=True)
        raise
    return watcher


async def test_a_file_written_straight_into_a_new_folder_is_reported(tmp_path: Path) -> None:
    """`mkdir -p okf-contracts/dN && echo x > okf-contracts/dN/c.md`: the file can land
    before the OS watches the new folder; the folder's own event makes it be found."""
    project = tmp_path.resolve()
    (project / "okf-contracts").mkdir()
    seen: set[str] = set()
    watcher = await watching_edits(project, seen, "app.py")
    try:
        for n in range(ROUNDS):
            folder = project / "okf-contracts" / f"d{n}" / "deeper"
            folder.mkdir(parents=True)
            (folder / "c.md").write_text("x\n")
            (folder.parent / "c.md").write_text("y\n")
        wanted = {f"okf-contracts/d{n}/{sub}c.md" for n in range(ROUNDS)
                  for sub in ("", "deeper/")}
        await eventually(lambda: seen, lambda s: wanted <= s,
                         "every file written into a new folder", timeout=10)
        assert not any(".md" in p and not p.startswith("okf-contracts/") for p in seen)
    finally:
        watcher.cancel()
        await asyncio.gather(watcher, return_exceptions=True)


def watched_inodes() -> set[int]:
    """The inodes this process's inotify instances watch (Linux: /proc/self/fdinfo)."""
    inodes: set[int] = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}") != "anon_inode:inotify":
                continue
            info = Path(f"/proc/self/fdinfo/{fd}").read_text()
        except OSError:
            continue  # closed meanwhile
        for line in info.splitlines():
            if line.startswith("inotify "):
                field = dict(kv.split(":", 1) for kv in line.split()[1:] if ":" in kv)
                inodes.add(int(field["ino"], 16))
    return inodes


async def test_the_history_and_tool_folders_are_not_watched_new_folders_are(
        tmp_path: Path) -> None:
    """The history under .llamon/ is written with every streamed token: the OS must not
    even report those writes (a recursive watch of the root woke the daemon for each). A
    folder made later is watched too: a file written into it afterwards is reported."""
    project = tmp_path.resolve()
    for folder in (".llamon/playground", ".venv/lib", "app/sub"):
        (project / folder).mkdir(parents=True)
    seen: set[str] = set()
    watcher = await watching_edits(project, seen, "app/sub/m.py")
    try:
        inodes = watched_inodes()
        ino = {name: (project / name).stat().st_ino
               for name in (".", "app", "app/sub", ".llamon", ".llamon/playground", ".venv/lib")}
        assert {ino["."], ino["app"], ino["app/sub"]} <= inodes
        assert not {ino[".llamon"], ino[".llamon/playground"], ino[".venv/lib"]} & inodes

        (project / "app" / "later").mkdir()
        later = (project / "app" / "later").stat().st_ino
        await eventually(watched_inodes, lambda s: later in s,
                         "the new folder to be watched", timeout=10)
        (project / "app" / "later" / "late.py").write_text("late = 1\n")
        await eventually(lambda: seen, lambda s: "app/later/late.py" in s,
                         "the file written into the new folder", timeout=10)
    finally:
        watcher.cancel()
        await asyncio.gather(watcher, return_exceptions=True)
