"""The project watcher on a real folder (OS notifications through watchfiles)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from llamon_playground.host_manager.fingerprint import WatchRules
from llamon_playground.host_manager.watcher import ProjectWatcher
from tests.support.waiting import eventually

ROUNDS = 12


async def test_a_file_written_straight_into_a_new_folder_is_reported(tmp_path: Path) -> None:
    """`mkdir -p okf-contracts/dN && echo x > okf-contracts/dN/c.md`: the file can land
    before the OS watches the new folder; the folder's own event makes it be found."""
    project = tmp_path.resolve()
    (project / "okf-contracts").mkdir()
    seen: set[str] = set()

    async def on_changes(paths: set[str]) -> None:
        seen.update(paths)

    watcher = asyncio.create_task(ProjectWatcher(WatchRules(project), on_changes,
                                                 quiet=0.05).run())
    try:
        # The watch is up once a plain edit is reported (edits before that go unseen).
        edits = iter(range(1_000_000))

        async def edit() -> set[str]:
            (project / "app.py").write_text(f"x = {next(edits)}\n")
            await asyncio.sleep(0)
            return seen
        await eventually(edit, lambda s: "app.py" in s, "the watcher to report a plain edit",
                         interval=0.2)
        for n in range(ROUNDS):
            folder = project / "okf-contracts" / f"d{n}" / "deeper"
            folder.mkdir(parents=True)
            (folder / "c.md").write_text("x\n")
            (folder.parent / "c.md").write_text("y\n")
        wanted = {f"okf-contracts/d{n}/{sub}c.md" for n in range(ROUNDS)
                  for sub in ("", "deeper/")}
        await eventually(lambda: asyncio.sleep(0, seen), lambda s: wanted <= s,
                         "every file written into a new folder", timeout=10)
        assert not any(".md" in p and not p.startswith("okf-contracts/") for p in seen)
    finally:
        watcher.cancel()
        await asyncio.gather(watcher, return_exceptions=True)
