"""History at a year's scale, on the real daemon: a previous version's file migrated in place
and compacted, replayed and exported byte for byte; a SIGKILL during compaction and during
a retention trim loses nothing acknowledged; a client connected while a run ends sees every
event once."""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from llamon_playground.daemon.http.sse import RECONNECT
from llamon_playground.daemon.store.frames import frame_payload
from llamon_playground.daemon.store.migrations import SCHEMA_VERSION
from tests.support.api import Api, P
from tests.support.procs import REPO, Stack, stack_for
from tests.support.waiting import eventually

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
V4_RUNS = 9


def read_db(stack: Stack, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(f"file:{stack.settings.db_path}?mode=ro", uri=True)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def install_v4_history(stack: Stack) -> None:
    """The history file a user of the previous version has (tests/fixtures/make_history_v4.py)."""
    state = stack.settings.db_path.parent
    state.mkdir(parents=True, mode=0o700)
    shutil.copyfile(FIXTURES / "history_v4.sqlite3", stack.settings.db_path)
    os.chmod(stack.settings.db_path, 0o600)
    shutil.copytree(FIXTURES / "history_v4_files", state / "files")


def v4_rows() -> list[tuple[int, str, str, str, bytes]]:
    conn = sqlite3.connect(f"file:{FIXTURES / 'history_v4.sqlite3'}?immutable=1", uri=True)
    try:
        return [(r[0], r[1], r[2], r[3], bytes(r[4])) for r in conn.execute(
            "SELECT seq, run_id, kind, ts, frame FROM events ORDER BY seq")]
    finally:
        conn.close()


async def raw_replay(api: Api, run_id: str, headers: dict[str, str] | None = None,
                     after: int | None = None) -> bytes:
    params = {"after": str(after)} if after is not None else {}
    async with api.http.get(f"{P}/runs/{run_id}/events", headers=headers or {},
                            params=params) as resp:
        assert resp.status in (200, 204)
        body = await resp.read()
    if resp.status == 204:
        return body
    # A stream opens with the reconnection time it asks of a browser, then the frames.
    assert body.startswith(RECONNECT), body[:40]
    return body[len(RECONNECT):]


def compacted(stack: Stack) -> bool:
    """Every finished run's events are blocks but for its terminal status."""
    left = read_db(stack, "SELECT COUNT(*), COUNT(DISTINCT run_id) FROM events")[0]
    return left[0] == left[1]


async def export_all(api: Api) -> dict[str, Any]:
    doc: dict[str, Any] = await api.ok("POST", "bundles/export", {})
    return doc


def event_content(bundle: dict[str, Any]) -> list[tuple[Any, ...]]:
    """Events as content, by their run's position (ids are new after an import)."""
    order = {run["id"]: (run["created_at"], orjson.dumps(run["input"]["parts"]).decode())
             for run in bundle["runs"]}
    return sorted((order[e["run_id"]], e["kind"], orjson.dumps(e["payload"]).decode(), e["ts"])
                  for e in bundle["events"])


@pytest.fixture
def v4_stack(project: Path, runtime_base: Path) -> Iterator[Stack]:
    with stack_for(project, runtime_base) as stack:
        install_v4_history(stack)
        stack.start_daemon()
        yield stack


async def test_a_previous_version_history_is_compacted_in_place_and_reads_the_same(
        v4_stack: Stack) -> None:
    rows = v4_rows()
    api = Api.for_socket(str(v4_stack.settings.socket_path))
    try:
        await eventually(lambda: compacted(v4_stack), what="the history compacted")
        assert read_db(v4_stack, "PRAGMA user_version")[0][0] == SCHEMA_VERSION
        assert read_db(v4_stack, "SELECT COUNT(*) FROM events")[0][0] == V4_RUNS
        runs = sorted({r[1] for r in rows})
        for run_id in runs:
            frames = [r for r in rows if r[1] == run_id]
            want = b"".join(r[4] for r in frames)
            assert await raw_replay(api, run_id) == want
            # Cursors inside the blocks, at their edges and on the last event: exact.
            for cut in (0, 1, len(frames) // 2, len(frames) - 2, len(frames) - 1):
                rest = b"".join(r[4] for r in frames[cut + 1:])
                seq = str(frames[cut][0])
                assert await raw_replay(api, run_id, {"Last-Event-ID": seq}) == rest
                assert await raw_replay(api, run_id, after=int(seq)) == rest
        # The bundle's events are the stored ones: payload, kind and commit time.
        bundle = await export_all(api)
        assert [(e["seq"], e["run_id"], e["kind"], e["ts"], e["payload"])
                for e in bundle["events"]] == [
            (seq, run_id, kind, ts, frame_payload(frame)) for seq, run_id, kind, ts, frame in rows]
        # Compare reads the runs as before.
        left, right = runs[0], runs[1]
        code, doc = await api.call("GET", f"compare?left={left}&right={right}")
        assert code == 200 and doc["left"]["run_id"] == left, doc
        # Round trip: imported, compacted at the next start, exported: the same content.
        await api.ok("POST", "bundles/import", bundle, status=201)
        await api.close()
        v4_stack.start_daemon()
        api = Api.for_socket(str(v4_stack.settings.socket_path))
        await eventually(lambda: compacted(v4_stack), what="the import compacted")
        again = await export_all(api)
        originals = {r["id"] for r in bundle["runs"]}
        copy = {**again, "runs": [r for r in again["runs"] if r["id"] not in originals],
                "events": [e for e in again["events"] if e["run_id"] not in originals]}
        assert len(copy["events"]) == len(rows)
        assert event_content(copy) == event_content(bundle)
    finally:
        await api.close()


async def import_copies(api: Api, bundle: dict[str, Any], copies: int) -> None:
    for _ in range(copies):
        await api.ok("POST", "bundles/import", bundle, status=201)


async def replays(api: Api, run_ids: list[str]) -> dict[str, bytes]:
    return {run_id: await raw_replay(api, run_id) for run_id in run_ids}


async def test_a_sigkill_during_compaction_loses_and_contradicts_nothing(
        v4_stack: Stack) -> None:
    api = Api.for_socket(str(v4_stack.settings.socket_path))
    try:
        await eventually(lambda: compacted(v4_stack), what="the history compacted")
        await import_copies(api, await export_all(api), 30)  # rows again, ~80k events
        run_ids = [r[0] for r in read_db(v4_stack, "SELECT id FROM runs ORDER BY rowid")]
        before = await replays(api, run_ids)
        bundle_before = await export_all(api)
    finally:
        await api.close()
    v4_stack.start_daemon()  # the sweep starts at boot: kill it half-way
    await eventually(lambda: read_db(v4_stack, "SELECT COUNT(*) FROM event_blocks")[0][0],
                     lambda n: n > 30, what="compaction under way", interval=0.002)
    assert not compacted(v4_stack)
    v4_stack.daemon.signal(signal.SIGKILL)
    v4_stack.daemon.wait(10)
    v4_stack.start_daemon()
    api = Api.for_socket(str(v4_stack.settings.socket_path))
    try:
        await eventually(lambda: compacted(v4_stack), what="the sweep finished", timeout=60)
        assert await replays(api, run_ids) == before
        assert event_content(await export_all(api)) == event_content(bundle_before)
    finally:
        await api.close()


async def test_a_client_connected_while_a_run_ends_sees_each_event_once(daemon: Stack) -> None:
    api = Api.for_socket(str(daemon.settings.socket_path))
    try:
        session = await api.session()
        run_id = await api.start_run(session, "tokens 3000")
        live = await api.events(run_id)  # from the first event, live, to the end
        # Connected as the run ends (the compactor moves it meanwhile), from a cursor.
        middle = await api.events(run_id, last_event_id=live[100].id)
        await eventually(lambda: compacted(daemon), what="the run compacted")
        replayed = await api.events(run_id)
        assert [e.id for e in live] == [e.id for e in replayed]
        assert [e.data for e in live] == [e.data for e in replayed]
        assert [e.id for e in middle] == [e.id for e in replayed[101:]]
        assert replayed[-1].data["status"] == "completed"
        deltas = [e for e in replayed if e.event == "output.delta"]
        assert len(deltas) == 3000
        # What a finished tokens run costs on disk, per delta, now it is blocks.
        size = read_db(daemon, "SELECT sum(length(frames) + length(stamps)) FROM "
                               "event_blocks WHERE run_id = ?", (run_id,))[0][0]
        assert size / len(deltas) <= 60
    finally:
        await api.close()


async def test_a_sigkill_during_a_trim_loses_nothing_kept_and_never_a_labelled_run(
        project: Path, runtime_base: Path) -> None:
    with stack_for(project, runtime_base) as stack:
        install_v4_history(stack)
        stack.start_daemon()
        api = Api.for_socket(str(stack.settings.socket_path))
        try:
            await import_copies(api, await export_all(api), 40)
            before = await export_all(api)
        finally:
            await api.close()
        labelled = {r["session_id"] for r in before["runs"] if r["label"]}
        assert len(labelled) == 41
        # The runs are from months ago: a 30-day policy removes every unlabelled session.
        stack.env["LLAMON_PLAYGROUND_HISTORY_MAX_AGE_DAYS"] = "30"
        stack.start_daemon()
        total = len(before["sessions"])
        await eventually(lambda: read_db(stack, "SELECT COUNT(*) FROM sessions")[0][0],
                         lambda n: n < total - 5, what="the trim under way", interval=0.002)
        stack.daemon.signal(signal.SIGKILL)
        stack.daemon.wait(10)
        del stack.env["LLAMON_PLAYGROUND_HISTORY_MAX_AGE_DAYS"]
        stack.start_daemon()
        api = Api.for_socket(str(stack.settings.socket_path))
        try:
            after = await export_all(api)
            kept = {s["id"] for s in after["sessions"]}
            assert labelled <= kept
            assert len(kept) < total
            # Whatever is still there is whole: its runs and every event, as before.
            def of(bundle: dict[str, Any]) -> dict[str, Any]:
                return {"runs": [r for r in bundle["runs"] if r["session_id"] in kept],
                        "events": sorted(orjson.dumps(e).decode() for e in bundle["events"]
                                         if any(r["id"] == e["run_id"] and r["session_id"]
                                                in kept for r in bundle["runs"]))}
            assert of(after) == of(before)
            # Nothing half removed: no run without its session, no event without its run.
            assert read_db(stack, "SELECT COUNT(*) FROM runs WHERE session_id NOT IN "
                                  "(SELECT id FROM sessions)")[0][0] == 0
            assert read_db(stack, "SELECT COUNT(*) FROM events WHERE run_id NOT IN "
                                  "(SELECT id FROM runs)")[0][0] == 0
            assert read_db(stack, "SELECT COUNT(*) FROM event_blocks WHERE run_id NOT IN "
                                  "(SELECT id FROM runs)")[0][0] == 0
            # The policy, run on demand, finishes the job; the labelled sessions stay.
            report = await api.ok("GET", "history")
            assert report["plan"]["sessions"] == []  # the policy is off in this daemon
        finally:
            await api.close()
        stack.env["LLAMON_PLAYGROUND_HISTORY_MAX_AGE_DAYS"] = "30"
        stack.start_daemon()
        api = Api.for_socket(str(stack.settings.socket_path))
        try:
            async with api.http.get("/health") as resp:
                history = (await resp.json())["history"]
            assert history["max_age_days"] == 30 and history["max_bytes"] is None
            assert history["bytes"] > 0
            await api.ok("POST", "history/trim")
            left = {s["id"] for s in (await export_all(api))["sessions"]}
            assert left == labelled
        finally:
            await api.close()


def cli(stack: Stack, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "llamon_playground", *args], env=stack.env,
                          cwd=REPO, capture_output=True, text=True, timeout=60, check=False)


async def test_the_history_command_reports_and_trims(project: Path, runtime_base: Path) -> None:
    with stack_for(project, runtime_base) as stack:
        install_v4_history(stack)
        stack.start_daemon()
        shown = cli(stack, "history", str(stack.project), "--dry-run", "--json")
        assert shown.returncode == 0, shown.stderr
        doc = orjson.loads(shown.stdout)
        assert doc["counts"] == {"sessions": 3, "runs": V4_RUNS, "events": len(v4_rows()),
                                 "files": 1}
        assert doc["policy"] == {"max_bytes": None, "max_age_days": None}
        assert doc["plan"]["sessions"] == [] and doc["bytes"]["files"] == 24
        # The policy off, a trim removes nothing.
        trimmed = orjson.loads(cli(stack, "history", "trim", str(stack.project), "--json").stdout)
        assert trimmed["removed"] == {"sessions": 0, "runs": 0}
        assert len(read_db(stack, "SELECT id FROM sessions")) == 3
        # On (30 days; the history is months old): the daemon applies it at start, and the
        # session with the labelled run stays.
        stack.env["LLAMON_PLAYGROUND_HISTORY_MAX_AGE_DAYS"] = "30"
        stack.start_daemon()
        labelled = read_db(stack, "SELECT session_id FROM runs WHERE label IS NOT NULL")[0][0]
        await eventually(lambda: read_db(stack, "SELECT id FROM sessions"),
                         lambda ids: ids == [(labelled,)], what="the policy applied")
        text = cli(stack, "history", str(stack.project))
        assert text.returncode == 0, text.stderr
        assert "policy:   sessions used within 30 days" in text.stdout
        assert "would remove: nothing" in text.stdout
        again = orjson.loads(cli(stack, "history", "trim", str(stack.project), "--json").stdout)
        assert again["removed"] == {"sessions": 0, "runs": 0}
        # The file a run of the kept session references too stays.
        assert len(list((stack.settings.db_path.parent / "files").iterdir())) == 1
        bad = cli(stack, "history", "trim", "--dry-run", str(stack.project))
        assert bad.returncode == 2
