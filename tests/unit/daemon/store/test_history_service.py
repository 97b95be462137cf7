"""The history service's rules against a real SQLite store and file store, in process:
deletion keeps clear of the active run and of the blobs it holds. The active run is what
the service is told it is (the `live` function the composition root wires to the run
manager); here the test says it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from llamon_playground.common.config import build_settings
from llamon_playground.daemon.errors import Conflict, NotFound
from llamon_playground.daemon.runs.reconcile import IMPORTED_ENDING
from llamon_playground.daemon.store.blobs import BlobStore
from llamon_playground.daemon.store.database import Store
from llamon_playground.daemon.store.event_log import ProjectEvents
from llamon_playground.daemon.store.history import create_session, insert_run
from llamon_playground.daemon.store.history_service import HistoryService, LiveRun


class World:
    """A store, a file store, and the active run the service is told of."""

    def __init__(self, tmp_path: Path, store: Store) -> None:
        self.store = store
        self.blobs = BlobStore(tmp_path / "files")
        self.live: LiveRun | None = None
        self.history = HistoryService(store, self.blobs, ProjectEvents(),
                                      db_path=tmp_path / "unused.db",
                                      live=lambda: self.live, imported=IMPORTED_ENDING)

    async def session_with_file(self, content: bytes) -> tuple[str, str]:
        session = await create_session(self.store, "s", {})
        sha = await self.blobs.put(content)
        run_id = f"run_{session['id'][4:]}"
        await insert_run(self.store, {
            "id": run_id, "session_id": session["id"], "status": "completed",
            "created_at": "2024-01-01T00:00:00.000Z", "context_id": session["context_id"],
            "input": {"parts": [{"kind": "file", "sha256": sha, "name": "f"}]}}, [sha])
        return session["id"], sha


@pytest.fixture
async def world(tmp_path: Path) -> AsyncIterator[World]:
    settings = build_settings(tmp_path, {"LLAMON_PLAYGROUND_RUNTIME_DIR": str(tmp_path / "rt")})
    store = Store(settings, on_commit=lambda rows: None)
    await store.open()
    yield World(tmp_path, store)
    await store.close()


async def test_deleting_the_session_of_the_active_run_is_refused_and_changes_nothing(
        world: World) -> None:
    session_id, sha = await world.session_with_file(b"kept")
    world.live = LiveRun("run_live", session_id, frozenset())
    with pytest.raises(Conflict) as refused:
        await world.history.delete_session(session_id)
    assert refused.value.code == "active_run_conflict"
    assert refused.value.detail()["active_run_id"] == "run_live"
    assert (await world.history.session(session_id))["id"] == session_id
    assert world.blobs.path_for(sha).is_file()


async def test_deleting_all_history_is_refused_while_any_run_is_active(world: World) -> None:
    session_id, _ = await world.session_with_file(b"kept")
    world.live = LiveRun("run_live", "ses_elsewhere", frozenset())
    with pytest.raises(Conflict):
        await world.history.delete_all()
    assert (await world.history.session(session_id))["id"] == session_id


async def test_a_deleted_session_takes_its_blobs_but_not_those_the_active_run_holds(
        world: World) -> None:
    session_id, sha = await world.session_with_file(b"shared")
    other_id, other_sha = await world.session_with_file(b"only mine")
    # Another session's run is active and its input names the same file, not yet recorded.
    world.live = LiveRun("run_live", "ses_elsewhere", frozenset({sha}))
    assert await world.history.delete_session(session_id) == {
        "deleted": session_id, "blobs_removed": 0}
    assert world.blobs.path_for(sha).is_file()
    world.live = None
    assert await world.history.delete_session(other_id) == {
        "deleted": other_id, "blobs_removed": 1}
    assert not world.blobs.path_for(other_sha).exists()
    with pytest.raises(NotFound):
        await world.history.delete_session(other_id)
