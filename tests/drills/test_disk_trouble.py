"""Drill: the disk under history stops taking writes mid-run, then takes them again.

Real faults: the project's .llamon/ (and, separately, the file store) live on their own
small tmpfs mounts that the test fills up (ENOSPC / SQLITE_FULL). Root ignores file modes,
so chmod would not do, and a read-only remount is refused while the daemon holds files
open for writing; a full disk is what a laptop really runs into. Mounting needs
CAP_SYS_ADMIN: the drill is skipped, saying so, where that is refused.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.drills.checks import check_database
from tests.support.api import TERMINAL, Api
from tests.support.endings import assert_phases_close, folded_text
from tests.support.kills import sigkill_mid_run
from tests.support.procs import Stack, stack_for, still_running
from tests.support.waiting import eventually

pytestmark = pytest.mark.drill


def _mount(cmd: list[str]) -> None:
    subprocess.run(cmd, check=True, capture_output=True, timeout=20)


@pytest.fixture
def mounts(project: Path) -> Iterator[dict[str, Path]]:
    state = project / ".llamon"
    files = state / "playground" / "files"
    state.mkdir()
    try:
        _mount(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(state)])
    except (subprocess.CalledProcessError, FileNotFoundError) as exc:
        pytest.skip(f"cannot mount a tmpfs here ({exc}); the disk drill needs CAP_SYS_ADMIN")
    files.mkdir(parents=True)
    _mount(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(files)])
    try:
        yield {"state": state, "files": files}
    finally:
        for target in (files, state):
            subprocess.run(["umount", "-l", str(target)], capture_output=True, timeout=20, check=False)


def fill(mount: Path) -> None:
    """Write a filler file until the mount is full, to the last page."""
    with open(mount / "filler", "wb", buffering=0) as fh:
        for size in (1 << 20, 1 << 12):
            chunk = b"\0" * size
            try:
                while fh.write(chunk) == size:
                    pass
            except OSError:
                pass


def drain(mount: Path) -> None:
    (mount / "filler").unlink(missing_ok=True)


async def wait_health(api: Api, degraded: bool) -> None:
    await eventually(lambda: api.ok("GET", "/health"),
                     lambda h: h["history_degraded"] == degraded,
                     f"history_degraded to become {degraded}")


@pytest.fixture
def disk_stack(project: Path, runtime_base: Path, mounts) -> Iterator[Stack]:  # type: ignore[no-untyped-def]
    env = {"ECHO_CHUNK_DELAY_MS": "20", "LLAMON_PLAYGROUND_DB_BUSY_TIMEOUT_MS": "100"}
    with stack_for(project, runtime_base, extra_env=env) as s:
        s.start_daemon()
        yield s


async def test_database_disk_full_mid_run(disk_stack: Stack, mounts) -> None:  # type: ignore[no-untyped-def]
    api = Api.for_socket(str(disk_stack.settings.socket_path))
    words = " ".join(f"w{i}" for i in range(60))
    try:
        session = await api.session()
        run_id = await api.start_run(session, "stream " + words)
        received: list[int] = []
        stream = api.stream(run_id)
        async for ev in stream:
            received.append(ev.id)
            if ev.event == "output.delta":
                break
        fill(mounts["state"])
        try:
            await wait_health(api, True)
            # A failed write makes the daemon truncate its WAL, which may give back the few
            # pages the next write needs (with small rows it often does): take those too.
            fill(mounts["state"])
            code, doc = await api.call("POST", "sessions", {})
            assert code == 503 and doc["detail"]["error"] == "history_unavailable"
            assert (await api.ok("GET", "sessions"))["sessions"], "reads keep working"
            live = await api.run(run_id)
            assert live["status"] in ("running", "completed")
        finally:
            drain(mounts["state"])
        async for ev in stream:
            received.append(ev.id)
        await wait_health(api, False)
        run = await api.wait_status(run_id)
        assert run["status"] == "completed"
        assert run["output"] == [{"kind": "text", "text": words}]
        events = await api.events(run_id)
        assert "history_degraded" in [e.data.get("code") for e in events if e.event == "diagnostic"]
        assert [e.id for e in events] == received
        nxt = await api.wait_status(await api.start_run(session, "stream after"))
        assert nxt["status"] == "completed"
    finally:
        await api.close()
    figures = check_database(disk_stack.settings.db_path, {run_id: received})
    print(f"database disk full mid-run: run completed, history_degraded reported, "
          f"{len(received)} events delivered once, integrity ok ({figures})")


async def test_file_store_unwritable_mid_run(disk_stack: Stack, mounts) -> None:  # type: ignore[no-untyped-def]
    api = Api.for_socket(str(disk_stack.settings.socket_path))
    try:
        session = await api.session()
        await api.wait_status(await api.start_run(session, "stream warm"))
        fill(mounts["files"])
        try:
            run = await api.wait_status(await api.start_run(session, "data"))
        finally:
            drain(mounts["files"])
        assert run["status"] == "completed"
        local = next(p for p in run["output"] if p["kind"] == "file" and "sha256" in p)
        assert local["availability"] == "unavailable" and local["size"] == 22
        events = await api.events(run["id"])
        assert "history_degraded" in [e.data.get("code") for e in events if e.event == "diagnostic"]
        again = await api.wait_status(await api.start_run(session, "data"))
        stored = next(p for p in again["output"] if p["kind"] == "file" and "sha256" in p)
        assert "availability" not in stored
        assert (disk_stack.settings.files_dir / stored["sha256"]).exists()
        print("file store full mid-run: run completed, the file part kept its hash with "
              "availability unavailable, history_degraded reported; the next run stored it")
    finally:
        await api.close()


async def test_long_outage_over_a_runs_end(disk_stack: Stack, mounts, scale) -> None:  # type: ignore[no-untyped-def]
    """The disk is full from just after a run is accepted (its Host not started yet, so
    its `running` move and its scores come in the outage) until after it ended (65 s at
    long scale, longer than any retry patience). Its ending is still written on the full
    disk (the space reserve is given back for it), once, with every row change, score and
    event it made during the outage; a new run then answers 503 history_unavailable (no
    room is kept for its ending) until space returns."""
    api = Api.for_socket(str(disk_stack.settings.socket_path))
    words = " ".join(f"w{i}" for i in range(30))
    hold = scale.n(4, 65)
    try:
        session = await api.session()
        run_id = await api.start_run(session, "stream " + words)
        fill(mounts["state"])
        try:
            await wait_health(api, True)
            # Its ending is written on the full disk (the reserve is given back for it).
            await eventually(lambda: api.run(run_id), lambda r: r["status"] in TERMINAL,
                             "the run to end on the full disk", 60)
            # What the reserve and the truncated WAL gave the ending beyond its need: taken
            # too (the outage goes on).
            fill(mounts["state"])
            # The outage's length, not a wait for anything: the invariants hold throughout.
            end = time.monotonic() + hold
            while time.monotonic() < end:
                code, doc = await api.call("POST", f"sessions/{session}/runs",
                                           {"parts": [{"kind": "text", "text": "stream no"}]})
                assert (code, doc["detail"]["error"]) == (503, "history_unavailable"), doc
                assert "no room is kept" in doc["detail"]["message"]
                await asyncio.sleep(0.25)
        finally:
            drain(mounts["state"])
        run = await api.wait_status(run_id)
        assert run["status"] == "completed" and run["reason"] is None
        assert run["output"] == [{"kind": "text", "text": words}]
        assert run["started_at"] is not None and run["ended_at"] is not None
        assert run["generation"] is not None
        assert [s["evaluator"] for s in run["scores"]] == ["word_count", "mentions_hello"]
        events = await api.events(run_id)
        statuses = [e.data["status"] for e in events if e.event == "run.status"]
        assert statuses == ["queued", "preparing", "running", "completed"]
        nxt = await api.wait_status(await api.start_run(session, "stream after"))
        assert nxt["status"] == "completed"
        await wait_health(api, False)  # the writes since space came back say so
    finally:
        await api.close()
    figures = check_database(disk_stack.settings.db_path,
                             {run_id: [e.id for e in events]})
    print(f"disk full for {hold} s over a run's end: the run ended on the full disk, once, "
          f"with its started_at, generation, scores and output; new runs 503 meanwhile "
          f"({figures})")


async def test_boot_recovery_on_a_full_disk_exits_saying_why(disk_stack: Stack, mounts) -> None:  # type: ignore[no-untyped-def]
    """A daemon dies mid-run; the next one starts on a full disk, so boot recovery cannot
    write: it exits non-zero saying why, leaving no process behind. With space back, the
    next start repairs the run."""
    _, run_id, hosts = await sigkill_mid_run(disk_stack)
    still_running(hosts, 10)
    fill(mounts["state"])
    try:
        booted = subprocess.run(
            [sys.executable, "-m", "llamon_playground", "daemon", str(disk_stack.project)],
            env=disk_stack.env, capture_output=True, text=True, timeout=60, check=False)
    finally:
        drain(mounts["state"])
    assert booted.returncode != 0, booted.stderr
    assert "boot recovery failed" in booted.stderr, booted.stderr
    assert "Traceback" not in booted.stderr, booted.stderr
    disk_stack.start_daemon()
    api = Api.for_socket(str(disk_stack.settings.socket_path))
    try:
        run = await api.run(run_id)
        assert (run["status"], run["reason"]) == ("interrupted", "daemon_restarted")
        assert run["output"] and run["output"][0]["text"].startswith("tick 1 ")
    finally:
        await api.close()
    check_database(disk_stack.settings.db_path, {})
    print("boot recovery on a full disk: exit code "
          f"{booted.returncode} saying why, nothing left running; the next start repaired it")


async def test_a_clean_stop_on_a_disk_with_no_room_left_is_told_at_the_next_start(
        disk_stack: Stack, mounts) -> None:  # type: ignore[no-untyped-def]
    """The disk fills to the last page mid-run, the space kept for the run's ending
    included (something else took it: the reserve file is gone). A clean stop cannot write
    the ending; it gives up after a moment rather than hang, and leaves a note, so the next
    start ends the run `interrupted` / `studio_shutdown` saying so, not as a crash."""
    api = Api.for_socket(str(disk_stack.settings.socket_path))
    try:
        run_id = await api.start_run(await api.session(), "slow")
        await api.first_output(run_id)
        (disk_stack.settings.state_dir / "history.reserve").unlink()
        fill(mounts["state"])
        try:
            await wait_health(api, True)
            assert disk_stack.daemon is not None
            disk_stack.remember_hosts()
            disk_stack.daemon.signal(signal.SIGTERM)
            assert disk_stack.daemon.wait(30) == 0
        finally:
            drain(mounts["state"])
    finally:
        await api.close()
    disk_stack.start_daemon()
    api = Api.for_socket(str(disk_stack.settings.socket_path))
    try:
        run = await api.run(run_id)
        events = await api.events(run_id)
    finally:
        await api.close()
    assert (run["status"], run["reason"]) == ("interrupted", "studio_shutdown")
    assert "history's disk took no writes" in run["error"]["message"]
    assert run["output"][0]["text"].startswith("tick 1 ")
    assert_phases_close([e.data for e in events if e.event == "run.phase"])
    check_database(disk_stack.settings.db_path, {})
    print("clean stop with no room for the ending: told apart from a crash at the next start")


@pytest.fixture
def small_disk_stack(project: Path, runtime_base: Path) -> Iterator[Stack]:
    """The whole .llamon/ on a 2 MiB tmpfs: history has to live within it."""
    state = project / ".llamon"
    state.mkdir()
    try:
        _mount(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(state)])
    except (subprocess.CalledProcessError, FileNotFoundError) as exc:
        pytest.skip(f"cannot mount a tmpfs here ({exc}); the disk drill needs CAP_SYS_ADMIN")
    try:
        # A chunk every 5 ms: one commit per delta, the WAL's worst case.
        with stack_for(project, runtime_base, extra_env={"ECHO_CHUNK_DELAY_MS": "5"}) as s:
            s.start_daemon()
            yield s
    finally:
        subprocess.run(["umount", "-l", str(state)], capture_output=True, timeout=20, check=False)


async def test_small_disk_keeps_every_event_of_long_streams(small_disk_stack: Stack,
                                                            scale) -> None:  # type: ignore[no-untyped-def]
    """400-word streams, one after another, on a 2 MiB state dir: the WAL is checkpointed
    so nothing stops being recorded and history is never degraded. (Each run keeps about
    170 KB of history, each event stored once as its SSE frame, and the WAL may reach 1 MiB
    mid-stream, so five runs is what 2 MiB holds; history itself is not capped.)"""
    api = Api.for_socket(str(small_disk_stack.settings.socket_path))
    words = " ".join(f"word{i}" for i in range(400))
    received: dict[str, list[int]] = {}
    try:
        session = await api.session()
        for _ in range(scale.n(3, 5)):
            run_id = await api.start_run(session, "stream " + words)
            events = await api.events(run_id)
            received[run_id] = [e.id for e in events]
            run = await api.wait_status(run_id)
            assert run["status"] == "completed" and run["output"] == [
                {"kind": "text", "text": words}]
            deltas = [e.data for e in events if e.event == "output.delta"]
            assert folded_text(deltas) == words and len(deltas) == 400
            health = await api.ok("GET", "/health")
            assert not health["history_degraded"]
    finally:
        await api.close()
    db = small_disk_stack.settings.db_path
    wal = Path(str(db) + "-wal")
    figures = check_database(db, received)
    print(f"2 MiB state dir: {len(received)} runs of 400 deltas each recorded whole, never "
          f"degraded; database {db.stat().st_size} bytes, WAL now "
          f"{wal.stat().st_size if wal.exists() else 0} bytes ({figures})")


async def test_runs_on_a_small_disk_that_fills_all_end_and_stop_stays_quick(
        small_disk_stack: Stack) -> None:
    """Six runs, one after the other, on a 2 MiB state dir left with little room (the rest
    filled): the disk fills mid-stream. Every run accepted ends, its ending written on the
    full disk (the space reserve is given back for it, history_degraded meanwhile); one
    asked for while no room is kept answers 503 history_unavailable. A clean stop on the
    full disk then takes its usual seconds, and no run is left `running`."""
    stack = small_disk_stack
    state = stack.project / ".llamon"
    api = Api.for_socket(str(stack.settings.socket_path))
    words = " ".join(f"word{i}" for i in range(400))
    ended: dict[str, dict] = {}
    refused = 0
    try:
        session = await api.session()  # history opens: its reserve is taken
        fill(state)
        filler = state / "filler"
        os.truncate(filler, max(0, filler.stat().st_size - (192 << 10)))  # a run's worth
        for _ in range(6):
            code, doc = await api.call("POST", f"sessions/{session}/runs",
                                       {"parts": [{"kind": "text", "text": "stream " + words}]})
            if code == 503:
                assert doc["detail"]["error"] == "history_unavailable", doc
                refused += 1
                continue
            assert code == 202, doc
            run = await api.wait_status(doc["run_id"], timeout=90)
            ended[run["id"]] = run
        degraded = [run_id for run_id in ended if "history_degraded" in [
            e.data.get("code") for e in await api.events(run_id) if e.event == "diagnostic"]]
    finally:
        await api.close()
    assert ended, "no run was accepted"
    assert degraded, "the disk never filled during a run: nothing was tested"
    assert all(run["status"] in TERMINAL for run in ended.values())
    assert stack.daemon is not None
    began = time.monotonic()
    stack.daemon.signal(signal.SIGTERM)
    assert stack.daemon.wait(30) == 0
    stopped_in = time.monotonic() - began
    # A functional bound, not a speed target: a stop that waited on the full disk took 10 s.
    assert stopped_in < 5.0, f"the daemon took {stopped_in:.1f} s to stop"
    drain(state)
    figures = check_database(stack.settings.db_path, {})  # no run left active
    print(f"small full disk: {len(ended)} run(s) ended ({len(degraded)} on the full disk), "
          f"{refused} refused with 503, stop in {stopped_in:.1f} s ({figures})")
