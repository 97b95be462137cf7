"""Long answers (docs/storage.md, "Large text"), with a real daemon and a real Host that
streams 1 KiB deltas as fast as it can (the benchmark's test Host): a daemon SIGKILLed
mid-answer stores what was streamed at its next start as a live run stores a long answer,
a blob written as the stored deltas are read, so the booting daemon does not hold the
crashed run's output; and a bundle of an answer over 16 MiB imports back whole."""

from __future__ import annotations

import hashlib
import io
import signal
import sqlite3
from pathlib import Path

import orjson

from llamon_playground.common.limits import TEXT_EXCERPT_CHARS
from llamon_playground.daemon.store.frames import frame_payload
from tests.support.api import Api, P
from tests.support.endings import folded_text
from tests.support.procs import REPO, copy_example, stack_for
from tests.support.waiting import eventually

HOSTILE_HOST = REPO / "scripts" / "benchmarks" / "children" / "hostile_host.py"
MB = 1_000_000
MIB = 1024 * 1024
KILL_AT = 48_000  # stored deltas of 1 KiB: a 48 MiB answer when the daemon dies
CLIENT_EVENTS = 500  # what the client reads of the stream before it stops reading


def hostile_project(root: Path) -> Path:
    project = copy_example(root)
    pyproject = project / "pyproject.toml"
    command = orjson.dumps(["{python}", str(HOSTILE_HOST)]).decode()
    pyproject.write_text(pyproject.read_text().replace(
        'host_command = ["{python}", "-m", "app.host"]', f"host_command = {command}")
        + "warm_start = false\n")
    return project


def stored_deltas(db: Path, run_id: str) -> list[dict]:
    conn = sqlite3.connect(db)
    try:
        return [frame_payload(row[0]) for row in conn.execute(
            "SELECT frame FROM events WHERE run_id = ? AND kind = 'output.delta' ORDER BY seq",
            (run_id,))]
    finally:
        conn.close()


def count_deltas(db: Path, run_id: str) -> int:
    conn = sqlite3.connect(db)
    try:
        return int(conn.execute("SELECT count(*) FROM events WHERE run_id = ? AND "
                                "kind = 'output.delta'", (run_id,)).fetchone()[0])
    finally:
        conn.close()


def peak_rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024 / MB
    raise AssertionError("no VmHWM")


async def test_a_crashed_long_answer_is_recovered_as_a_blob_without_holding_it(
        tmp_path: Path, runtime_base: Path) -> None:
    with stack_for(hostile_project(tmp_path), runtime_base) as stack:
        stack.start_daemon()
        assert stack.daemon is not None
        db = stack.settings.db_path
        api = Api.for_socket(str(stack.settings.socket_path))
        try:
            session = await api.session()
            run_id = await api.start_run(session, "deltas 270000")
            received = [e.data for e in await api.events(run_id, limit=CLIENT_EVENTS)
                        if e.event == "output.delta"]
            await eventually(lambda: count_deltas(db, run_id), lambda n: n >= KILL_AT,
                             "the Host's answer to be tens of MB in history", timeout=90)
        finally:
            await api.close()
        stack.remember_hosts()
        stack.daemon.signal(signal.SIGKILL)
        stack.daemon.wait(10)
        deltas = stored_deltas(db, run_id)
        whole = folded_text(deltas).encode()
        assert len(whole) >= KILL_AT * 1024
        del deltas

        stack.start_daemon()
        api = Api.for_socket(str(stack.settings.socket_path))
        try:
            run = await api.run(run_id)
            assert (run["status"], run["reason"]) == ("interrupted", "daemon_restarted")
            [part] = [p for p in run["output"] if p["kind"] == "text"]
            assert part["truncated"] is True and len(part["text"]) == TEXT_EXCERPT_CHARS
            assert part["size"] == len(whole)
            assert part["sha256"] == hashlib.sha256(whole).hexdigest()
            async with api.http.get(part["content_url"]) as resp:
                assert resp.status == 200
                assert int(resp.headers["Content-Length"]) == len(whole)
                assert await resp.read() == whole, "the blob is the stored deltas, in order"
            assert whole.startswith(folded_text(received).encode()), \
                "what the client got is a prefix"
            # The recovered run.output event names this run's part route, as a live one.
            [output] = [e.data for e in await api.events(run_id) if e.event == "run.output"]
            assert output["parts"][0]["content_url"] == part["content_url"]
            assert "sha256" in output["parts"][0]
            # A functional bound, not a speed target: folding the deltas in memory took the
            # booting daemon to 1.1 GB for this 53 MB answer (2026-12-04).
            assert peak_rss_mb(stack.daemon.popen.pid) < 100 + len(whole) / MB, \
                peak_rss_mb(stack.daemon.popen.pid)
        finally:
            await api.close()


async def test_a_bundle_of_an_answer_over_16_mib_imports_back_whole(
        tmp_path: Path, runtime_base: Path) -> None:
    """A long answer is one blob: its bundle imports back (a blob may take the bundle's
    whole allowance), and the imported run's events name the imported run."""
    with stack_for(hostile_project(tmp_path), runtime_base, extra_env={
            "LLAMON_PLAYGROUND_MAX_RUN_OUTPUT_BYTES": str(20 * MIB)}) as stack:
        stack.start_daemon()
        api = Api.for_socket(str(stack.settings.socket_path))
        try:
            session = await api.session()
            run_id = await api.start_run(session, "deltas 270000")
            run = await api.wait_status(run_id, timeout=90)
            assert run["reason"] == "host_output_too_large"
            [part] = [p for p in run["output"] if p["kind"] == "text"]
            assert part["size"] > 16 * MIB
            async with api.http.get(part["content_url"]) as resp:
                whole = await resp.read()
            assert len(whole) == part["size"]

            code, bundle = await api.call("POST", "bundles/export", {"run_ids": [run_id]})
            assert code == 200, bundle
            assert bundle["blobs"][part["sha256"]]["size"] == len(whole)
            async with api.http.post(f"{P}/bundles/import", data=io.BytesIO(orjson.dumps(bundle)),
                                     headers={"Content-Type": "application/json"}) as resp:
                assert resp.status == 201, await resp.read()
                doc = orjson.loads(await resp.read())
            del bundle
            copy_id = doc["runs"][run_id]
            copy = await api.run(copy_id)
            [copied] = [p for p in copy["output"] if p["kind"] == "text"]
            assert copied["content_url"] == part["content_url"].replace(run_id, copy_id)
            async with api.http.get(copied["content_url"]) as resp:
                assert resp.status == 200 and await resp.read() == whole

            # Each run's run.output event names its own part route, as its detail does.
            for ran, detail in ((run_id, part), (copy_id, copied)):
                [output] = [e.data for e in await api.events(ran) if e.event == "run.output"]
                [event_part] = [p for p in output["parts"] if p["kind"] == "text"]
                assert event_part["content_url"] == detail["content_url"]
        finally:
            await api.close()
