"""History as the routes see it: sessions and runs, their edits, files, compare, bundles and
deletion, each with its rules (docs/storage.md). The HTTP layer parses, calls and renders.

Deletion keeps clear of the active run, which this room cannot see: whoever builds the
service passes `live`, a function that says which run is active now and which blobs it
holds (the run manager's, wired by `daemon.app`). What `live` says is also the one answer
to "is the project busy?" (`refuse_if_busy`), for every refusal that asks it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from llamon_playground.common.limits import DEFAULT_LIMITS, Limits
from llamon_playground.daemon.data.big_documents import collector_paused, dismantle
from llamon_playground.daemon.data.bundle_json import (
    check_value_budget,
    dump_bundle,
    parse_bundle_body,
)
from llamon_playground.daemon.data.compare import compare_runs
from llamon_playground.daemon.data.redact import redact_metadata
from llamon_playground.daemon.errors import BadRequest, Conflict, NotFound
from llamon_playground.daemon.store import history
from llamon_playground.daemon.store.blobs import BlobStore
from llamon_playground.daemon.store.bundles import Ending, export_bundle, import_bundle
from llamon_playground.daemon.store.database import Store
from llamon_playground.daemon.store.event_log import ProjectEvents
from llamon_playground.daemon.store.lineage import lineage
from llamon_playground.daemon.store.removal import deletion
from llamon_playground.daemon.store.removal.space import give_back


@dataclass(frozen=True)
class LiveRun:
    """The active run, as far as deletion must know it."""

    run_id: str | None  # None between two cases of a suite run
    session_id: str | None
    file_shas: frozenset[str]  # its input's blobs, some perhaps not recorded yet
    suite_run_id: str | None = None  # the suite run holding the project, if one does


def refuse_if_busy(live: LiveRun | None, doing: str, own_suite_run: str | None = None) -> None:
    """409 `active_run_conflict` while a run or a suite run holds the project: the one
    answer to "is the project busy?" for every refusal that asks it (a run's start, a suite
    run's, Host stop and restart, deleting all history). `own_suite_run` is the suite run
    asking for its own case's run: its own hold lets that through, a run never."""
    if live is None:
        return
    held = live.suite_run_id
    if live.run_id is None and held is not None and held == own_suite_run:
        return
    # During a suite run both ids, so a client can cancel either (`active_run_id` is None
    # between two of its cases).
    extra: dict[str, Any] = {"suite_run_id": held} if held is not None else {}
    holder = f"run {live.run_id} is active" if live.run_id else f"suite run {held} is running"
    raise Conflict(f"cannot {doing} while {holder}; cancel it or wait for it to end",
                   code="active_run_conflict", active_run_id=live.run_id, **extra)


class HistoryService:
    """Sessions and runs in history, and the blobs their files are stored in."""

    def __init__(self, store: Store, blobs: BlobStore, events: ProjectEvents, *,
                 db_path: Path, live: Callable[[], LiveRun | None], imported: Ending,
                 limits: Limits = DEFAULT_LIMITS) -> None:
        self._store = store
        self._limits = limits  # a bundle meets the same limits as the API
        self._db_path = db_path
        self._blobs = blobs
        self._events = events
        self._live = live
        self._imported = imported
        # Import and deletion both add or unlink blobs around their transaction; taking
        # turns keeps one from unlinking a blob the other has just written and is about to
        # reference.
        self._blob_changes = asyncio.Lock()
        self._deleting_all = asyncio.Lock()

    # -- sessions ---------------------------------------------------------------------------

    async def list_sessions(self, after: int, limit: int,
                            newest_first: bool = False) -> history.Page:
        """One page of sessions after the cursor `after` (in either order)."""
        return await history.list_sessions(self._store, after, limit, newest_first)

    async def session(self, session_id: str) -> dict[str, Any]:
        """One session; NotFound (session_not_found) when there is none."""
        session = await history.get_session(self._store, session_id)
        if session is None:
            raise NotFound(f"no session {session_id}", code="session_not_found")
        return session

    async def create_session(self, fields: dict[str, Any]) -> dict[str, Any]:
        """A new session from parsed fields; its metadata is stored redacted."""
        session = await history.create_session(self._store, fields.get("title", ""),
                                               redact_metadata(fields.get("metadata", {})))
        self._events.updated("session.created", {"session_id": session["id"],
                                                 "session": session})
        return session

    async def update_session(self, session_id: str, fields: dict[str, Any]) -> dict[str, Any]:
        """Apply parsed fields (validated in full before: a refused edit changes nothing)."""
        if "metadata" in fields:
            fields = {**fields, "metadata": redact_metadata(fields["metadata"])}
        session = await history.update_session(self._store, session_id, fields)
        if session is None:
            raise NotFound(f"no session {session_id}", code="session_not_found")
        if fields:
            self._events.updated("session.updated", {
                "session_id": session_id, "fields": sorted(fields), "session": session})
        return session

    # -- runs -------------------------------------------------------------------------------

    async def list_runs(self, session_id: str, after: int, limit: int,
                        newest_first: bool) -> history.Page:
        """One page of a session's runs; NotFound when the session does not exist."""
        await self.session(session_id)
        return await history.list_runs(self._store, session_id, after, limit,
                                       newest_first=newest_first)

    async def run(self, run_id: str, side: str | None = None) -> dict[str, Any]:
        """The run as history has it (the run manager's `view` adds what memory knows)."""
        run = await history.get_run(self._store, run_id)
        if run is None:
            if side is not None:
                raise NotFound(f"no run {run_id} ({side})", code="run_not_found", side=side)
            raise NotFound(f"no run {run_id}", code="run_not_found")
        return run

    async def update_run(self, run_id: str, fields: dict[str, Any]) -> dict[str, Any]:
        """Only the run's own columns: the active run's status and output stay its own."""
        run = await history.update_run_fields(self._store, run_id, fields)
        if run is None:
            raise NotFound(f"no run {run_id}", code="run_not_found")
        if fields:
            self._events.updated("run.updated", {
                "run_id": run_id, "session_id": run["session_id"], "fields": sorted(fields),
                "label": run["label"], "note": run["note"]})
        return run

    async def lineage(self, run_id: str) -> dict[str, Any]:
        """A run's ancestors and descendants; NotFound when the run does not exist."""
        answer = await lineage(self._store, run_id)
        if answer is None:
            raise NotFound(f"no run {run_id}", code="run_not_found")
        return answer

    async def compare(self, left: str, right: str) -> dict[str, Any]:
        """Two runs side by side; BadRequest unless both ids are given, NotFound naming the
        missing side."""
        if not (left and right):
            raise BadRequest("give both run ids: ?left=<run_id>&right=<run_id>",
                             code="invalid_request")
        runs = {side: await self.run(run_id, side)
                for side, run_id in (("left", left), ("right", right))}
        # Off the loop: the diff work is capped, but two large runs still take a while to walk.
        return await asyncio.to_thread(compare_runs, runs["left"], runs["right"])

    # -- files ------------------------------------------------------------------------------

    async def file(self, sha: str) -> tuple[Path, dict[str, Any]]:
        """A stored blob's path and the newest file part naming it (name, MIME)."""
        path = self._blobs.path_for(sha)  # 404 file_not_found unless 64 lowercase hex digits
        part = await history.find_file_part(self._store, sha)
        if part is None or not path.is_file():
            raise NotFound(f"no stored file {sha}", code="file_not_found")
        return path, part

    async def part_content(self, run_id: str, side: str, index: int
                           ) -> tuple[dict[str, Any], Path | None]:
        """A run's stored part and, when its content is a blob (a file, a long text), the
        blob's path; NotFound when either is gone."""
        part = await history.stored_part(self._store, run_id, side, index)
        sha = part.get("sha256")
        if not isinstance(sha, str):
            return part, None
        path = self._blobs.path_for(sha)
        if not path.is_file():
            raise NotFound(f"the content of {side} part {index} of run {run_id} is not "
                           "stored (the disk refused it, or it was removed)",
                           code="file_not_found")
        return part, path

    # -- bundles ----------------------------------------------------------------------------

    async def export(self, session_ids: list[str] | None, run_ids: list[str] | None) -> bytes:
        """The bundle's bytes, built and dumped off the event loop."""
        with collector_paused():  # the bundle is millions of objects: see big_documents
            bundle = await export_bundle(self._db_path, self._blobs, session_ids, run_ids)
            try:
                body = await asyncio.to_thread(dump_bundle, bundle)  # up to ~200 MB
            finally:
                await asyncio.to_thread(dismantle, bundle)
                del bundle  # gone before the collector is back on
        await asyncio.to_thread(check_value_budget, body)
        return body

    async def import_(self, raw: bytearray | bytes) -> dict[str, Any]:
        """Import a bundle from its raw bytes; the new IDs by old ones."""
        with collector_paused():  # see big_documents
            # Off the loop: counted before parsing, parsed with room for other requests.
            body = await asyncio.to_thread(parse_bundle_body, raw, self._limits)
            del raw  # the parsed bundle is all the import needs from here
            try:
                async with self._blob_changes:
                    imported = await import_bundle(self._store, self._blobs, body,
                                                   self._imported, self._limits)
                # Several at once: one event, with no id (a client reads its list again).
                self._events.updated("session.created", {"session_id": None, "session": None})
                return imported
            finally:
                del body  # emptied by the import: gone before the collector is back on

    # -- deletion ---------------------------------------------------------------------------

    async def delete_all(self) -> dict[str, Any]:
        """Every session, run and event there is when asked, and every blob nothing
        references after; refused while the project is busy (`refuse_if_busy`). A step at a time
        (`daemon/store/removal/deletion.py`), each its own short transaction: other writes and
        requests go on between; then the freed pages go back to the filesystem."""
        async with self._deleting_all:  # a second waits, then deletes what is left
            async with self._blob_changes:
                # Checked with no await before `begin` is queued.
                refuse_if_busy(self._live(), "delete all history")
                tally = await self._store.write(deletion.begin)
                removed = await self._unlink_unreferenced(sorted(tally.shas))
            more = True
            while more:
                await asyncio.sleep(deletion.PAUSE)  # the loop and other writers first
                async with self._blob_changes:  # an import may go between two steps
                    done = await self._store.write(
                        partial(deletion.step, others_waiting=self._store.writes_waiting))
                    removed += await self._unlink_unreferenced(sorted(done.shas))
                tally.add(done)
                more = done.more
            await give_back(self._store, self._db_path.parent)
        self._events.updated("session.deleted", {"session_id": None})  # all of them
        return {"deleted": tally.counts(), "blobs_removed": removed}

    async def delete_session(self, session_id: str) -> dict[str, Any]:
        """One session with its runs and events; refused while it holds the active run."""
        async with self._blob_changes:
            await self.session(session_id)
            active = self._live()
            if active is not None and active.session_id == session_id:
                raise Conflict("the session holds the active run", code="active_run_conflict",
                               active_run_id=active.run_id)
            shas = await history.delete_session(self._store, session_id)
            removed = await self._unlink_unreferenced(shas)
        self._events.updated("session.deleted", {"session_id": session_id})
        return {"deleted": session_id, "blobs_removed": removed}

    async def remove_for_policy(self, session_id: str,
                                delete: Callable[[], Awaitable[list[str] | None]]) -> int | None:
        """The retention policy's removal of one session, held to deletion's rules: never
        the active run's session, in turn with imports and deletions, the blobs orphaned
        unlinked after the commit. `delete` commits and returns the blobs the removed runs
        referenced (None: it kept the session after all); the answer is how many went."""
        async with self._blob_changes:
            active = self._live()
            if active is not None and active.session_id == session_id:
                return None
            shas = await delete()
            if shas is None:
                return None
            removed = await self._unlink_unreferenced(shas)
        self._events.updated("session.deleted", {"session_id": session_id})
        return removed

    async def _unlink_unreferenced(self, shas: list[str]) -> int:
        """After the commit, unlink only blobs nothing references by now: a run may have
        started meanwhile, its input files written but not yet recorded. A crash in between
        leaves an unreferenced blob, never a hole."""
        orphans = await history.unreferenced(self._store, shas)
        starting = self._live()
        keep = starting.file_shas if starting is not None else frozenset()
        orphans = [sha for sha in orphans if sha not in keep]
        for sha in orphans:
            self._blobs.unlink(sha)
        return len(orphans)
