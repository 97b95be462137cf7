"""Processes dying and coming back: front, daemon (clean and SIGKILL)."""

from __future__ import annotations

import signal
import sqlite3
from collections.abc import AsyncIterator

import psutil
import pytest

from tests.support.api import Api
from tests.support.endings import assert_phases_close, folded_text, stored_text
from tests.support.kills import sigkill_mid_run
from tests.support.procs import Stack, stack_for, still_running
from tests.support.waiting import eventually

MANY_WORDS = " ".join(f"w{i}" for i in range(300))


@pytest.fixture
def slow_stack(project, runtime_base):
    with stack_for(project, runtime_base, extra_env={"ECHO_CHUNK_DELAY_MS": "10"}) as s:
        s.start_daemon()
        yield s


def db_rows(stack: Stack, sql: str) -> list[tuple]:
    conn = sqlite3.connect(stack.settings.db_path)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


async def test_front_killed_and_restarted_mid_run(slow_stack: Stack) -> None:
    front1, url1 = slow_stack.start_front()
    api1 = Api.for_url(url1)
    session = await api1.session()
    run_id = await api1.start_run(session, "stream " + MANY_WORDS)
    first = await api1.events(run_id, limit=10)
    await api1.close()
    front1.signal(signal.SIGKILL)
    front1.wait(10)
    _, url2 = slow_stack.start_front()
    api2 = Api.for_url(url2)
    try:
        rest = await api2.events(run_id, last_event_id=first[-1].id)
        full = await api2.events(run_id)
        assert [e.id for e in first + rest] == [e.id for e in full]
        assert full[-1].data["status"] == "completed"
        run = await api2.run(run_id)
        assert run["output"] == [{"kind": "text", "text": MANY_WORDS}]
    finally:
        await api2.close()


async def test_daemon_down_gives_503_and_front_recovers(daemon: Stack) -> None:
    _, url = daemon.start_front()
    api = Api.for_url(url)
    try:
        await api.session()
        daemon.daemon.stop()
        code, doc = await api.call("GET", "sessions")
        assert code == 503 and doc["detail"]["error"] == "daemon_unavailable"
        # The reason, not the machine's paths (the socket's path stays in the front's log).
        assert str(daemon.runtime_base) not in doc["detail"]["message"], doc
        assert "/" not in doc["detail"]["message"].split("(", 1)[1].split(")")[0], doc
        daemon.start_daemon()
        sessions = await api.ok("GET", "sessions")
        assert len(sessions["sessions"]) == 1
    finally:
        await api.close()


async def test_daemon_killed_mid_request_gives_503_not_500(daemon: Stack) -> None:
    """The daemon dies while the front relays a request body to it: the front answers
    503 daemon_unavailable and logs no traceback."""
    front, url = daemon.start_front()
    direct = Api.for_socket(str(daemon.settings.socket_path))
    api = Api.for_url(url)
    assert daemon.daemon is not None
    killed = psutil.Process(daemon.daemon.popen.pid)
    before = len(killed.net_connections(kind="unix"))

    async def body() -> AsyncIterator[bytes]:
        yield b'{"parts": [{"kind": "text", "text": "'
        # The front has opened its upstream connection: the daemon is mid-request.
        await eventually(lambda: len(killed.net_connections(kind="unix")),
                         lambda n: n > before, "the front's upstream connection")
        daemon.daemon.signal(signal.SIGKILL)  # type: ignore[union-attr]
        daemon.daemon.wait(10)  # type: ignore[union-attr]
        yield b'x"}]}'

    try:
        session = await direct.session()
        code, doc = await api.call("POST", f"sessions/{session}/runs", raw=body())  # type: ignore[arg-type]
        assert code == 503 and doc["detail"]["error"] == "daemon_unavailable", (code, doc)
        assert "Traceback" not in front.output()
    finally:
        await api.close()
        await direct.close()


async def test_daemon_sigterm_mid_run_interrupts_with_studio_shutdown(slow_stack: Stack) -> None:
    api = Api.for_socket(str(slow_stack.settings.socket_path))
    try:
        session = await api.session()
        run_id = await api.start_run(session, "slow")
        await api.first_output(run_id)
        slow_stack.remember_hosts()
        hosts = [p for p in slow_stack.daemon.descendants()]
        assert hosts, "the Host should be running"
        slow_stack.daemon.signal(signal.SIGTERM)
        assert slow_stack.daemon.wait(30) == 0
    finally:
        await api.close()
    status, reason = db_rows(slow_stack, f"SELECT status, reason FROM runs WHERE id='{run_id}'")[0]
    assert (status, reason) == ("interrupted", "studio_shutdown")
    last = db_rows(slow_stack, f"SELECT kind, frame FROM events WHERE run_id='{run_id}' "
                               "ORDER BY seq DESC LIMIT 1")[0]
    assert last[0] == "run.status" and b'"interrupted"' in last[1]
    assert not still_running(hosts, 10), "a clean stop stops the Host"


async def test_daemon_sigkill_mid_run_is_interrupted_on_next_start(slow_stack: Stack) -> None:
    session, run_id, hosts = await sigkill_mid_run(slow_stack)
    # PDEATHSIG: the Host does not outlive a SIGKILLed daemon.
    assert not still_running(hosts, 10)
    assert db_rows(slow_stack, f"SELECT status FROM runs WHERE id='{run_id}'")[0][0] == "running"
    slow_stack.start_daemon()
    api = Api.for_socket(str(slow_stack.settings.socket_path))
    try:
        run = await api.run(run_id)
        assert run["status"] == "interrupted" and run["reason"] == "daemon_restarted"
        events = await api.events(run_id)
        assert events[-1].data["status"] == "interrupted"
        seqs = [e.id for e in events]
        assert seqs == sorted(set(seqs))
        # What it had streamed is kept, and the phase it was in is closed.
        deltas = [e.data for e in events if e.event == "output.delta"]
        assert folded_text(deltas) == stored_text(run["output"]) != ""
        assert_phases_close([e.data for e in events if e.event == "run.phase"])
        nxt = await api.wait_status(await api.start_run(session, "stream fine"))
        assert nxt["status"] == "completed"
    finally:
        await api.close()


def interrupted_ends(run: dict, events: list) -> dict[str, dict]:
    """The closing events of a run interrupted while sending, by phase, once checked: the
    phase it was in (send) and its complete phase end `interrupted` (never `completed`),
    with the run's reason; the complete phase says why."""
    phases = [e.data for e in events if e.event == "run.phase"]
    assert_phases_close(phases)
    ends = {p["phase"]: p for p in phases if p["state"] != "started"}
    for phase in ("send", "complete"):
        assert ends[phase]["state"] == "interrupted", (phase, ends[phase])
        assert ends[phase]["reason"] == run["reason"]
    assert ends["complete"]["message"] == run["error"]["message"]
    assert "completed" not in [p["state"] for p in phases[phases.index(ends["send"]):]]
    return ends


async def test_a_clean_stop_and_a_kill_each_say_what_interrupted_the_run(
        slow_stack: Stack) -> None:
    """A run cut by a clean stop and one cut by a SIGKILL both end `interrupted`, with an
    `error` that says which: the stopping daemon writes the first, the next start the
    second. Their open phases end `interrupted` too, never `completed`."""
    stopped, killed = await sigterm_mid_run(slow_stack), None
    slow_stack.start_daemon()
    _, killed, _ = await sigkill_mid_run(slow_stack)
    slow_stack.start_daemon()
    api = Api.for_socket(str(slow_stack.settings.socket_path))
    try:
        by_stop, by_kill = await api.run(stopped), await api.run(killed)
        stop_events, kill_events = await api.events(stopped), await api.events(killed)
    finally:
        await api.close()
    assert (by_stop["status"], by_stop["reason"]) == ("interrupted", "studio_shutdown")
    assert (by_kill["status"], by_kill["reason"]) == ("interrupted", "daemon_restarted")
    assert "the daemon was stopped" in by_stop["error"]["message"]
    assert "killed or crashed" in by_kill["error"]["message"]
    assert by_stop["error"]["message"] != by_kill["error"]["message"]
    for run, events in ((by_stop, stop_events), (by_kill, kill_events)):
        interrupted_ends(run, events)
        # What it had streamed is kept, then the part that says why it ended.
        assert run["output"][-1] == run["error"] and stored_text(run["output"])


async def sigterm_mid_run(stack: Stack) -> str:
    """Start a `slow` run, wait for its first output, stop the daemon cleanly: the run."""
    assert stack.daemon is not None
    api = Api.for_socket(str(stack.settings.socket_path))
    try:
        run_id = await api.start_run(await api.session(), "slow")
        await api.first_output(run_id)
    finally:
        await api.close()
    stack.remember_hosts()
    stack.daemon.signal(signal.SIGTERM)
    assert stack.daemon.wait(30) == 0
    return run_id


async def test_an_acknowledged_run_survives_a_sigkill_right_after_its_202(daemon: Stack) -> None:
    """The 202 leaves once the run's row and its queued status are durable: a SIGKILL the
    moment it arrives loses neither, round after round, and the next start ends the run."""
    accepted: list[tuple[str, str]] = []
    for _ in range(3):
        api = Api.for_socket(str(daemon.settings.socket_path))
        try:
            session = await api.session()
            text = f"stream acknowledged {len(accepted)}"
            run_id = await api.start_run(session, text)
        finally:
            await api.close()
        assert daemon.daemon is not None
        daemon.remember_hosts()
        daemon.daemon.signal(signal.SIGKILL)  # no await since the 202 was read
        daemon.daemon.wait(10)
        accepted.append((run_id, text))
        row = db_rows(daemon, f"SELECT input FROM runs WHERE id='{run_id}'")
        assert row and text in row[0][0], "the acknowledged run is in history"
        first = db_rows(daemon, f"SELECT kind, frame FROM events WHERE run_id='{run_id}' "
                                "ORDER BY seq LIMIT 1")
        assert first and first[0][0] == "run.status" and b'"queued"' in first[0][1]
        daemon.start_daemon()
    api = Api.for_socket(str(daemon.settings.socket_path))
    try:
        for run_id, text in accepted:
            run = await api.run(run_id)
            assert run["input"]["parts"] == [{"kind": "text", "text": text}]
            assert run["status"] == "interrupted" and run["reason"] == "daemon_restarted"
            events = await api.events(run_id)
            assert events[0].event == "run.status" and events[0].data["status"] == "queued"
            assert events[-1].data["status"] == "interrupted"
    finally:
        await api.close()


def test_health_alone_creates_no_state_folder(daemon: Stack) -> None:
    import socket
    with socket.socket(socket.AF_UNIX) as sock:
        sock.connect(str(daemon.settings.socket_path))
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: d\r\nConnection: close\r\n\r\n")
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 200") and b'"database":"not_opened"' in answer
    assert not (daemon.project / ".llamon").exists()


async def test_newer_database_is_left_byte_identical(stack: Stack) -> None:
    db = stack.settings.db_path
    db.parent.mkdir(parents=True)
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE future (x)")
    conn.execute("PRAGMA user_version = 99")
    conn.commit()
    conn.close()
    before = db.read_bytes()
    files_before = sorted(p.name for p in db.parent.iterdir())
    stack.start_daemon()
    api = Api.for_socket(str(stack.settings.socket_path))
    try:
        for method, path, body in [("POST", "sessions", {}), ("GET", "sessions", None),
                                   ("POST", "sessions/ses_x/runs",
                                    {"parts": [{"kind": "text", "text": "x"}]})]:
            code, doc = await api.call(method, path, body)
            assert code == 409, (method, path, doc)
            assert doc["detail"]["error"] == "unsupported_database_version"
    finally:
        await api.close()
    assert db.read_bytes() == before
    assert sorted(p.name for p in db.parent.iterdir() if p.name != "files") == files_before


async def test_a2a_03_only_host_streams_and_cancels(project, runtime_base) -> None:
    with stack_for(project, runtime_base, extra_env={"LLAMON_A2A_VERSIONS": "0.3"}) as s:
        s.start_daemon()
        api = Api.for_socket(str(s.settings.socket_path))
        try:
            session = await api.session()
            run = await api.wait_status(await api.start_run(session, "stream old protocol"))
            assert run["status"] == "completed"
            assert run["output"] == [{"kind": "text", "text": "old protocol"}]
            slow = await api.start_run(session, "slow")
            await api.first_output(slow)
            assert (await api.ok("DELETE", f"runs/{slow}"))["status"] == "cancelled"
            ask = await api.wait_status(await api.start_run(session, "ask"))
            assert ask["status"] == "input_required"
            child = (await api.ok("POST", f"runs/{ask['id']}/resume",
                                  {"parts": [{"kind": "text", "text": "Bo"}]}, 202))["run_id"]
            done = await api.wait_status(child)
            assert done["status"] == "completed" and done["output"][0]["text"] == "Hello, Bo!"
        finally:
            await api.close()
