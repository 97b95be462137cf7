"""Suites end to end: the real daemon, front and example Host; cases from stored runs, a
resume chain and a session; the report after an edit; cancel, 409, run on save, SIGKILL."""

from __future__ import annotations

import signal
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.api import Api, P, parse_sse
from tests.support.procs import Stack, stack_for
from tests.support.waiting import eventually

WATCH_ENV = {"LLAMON_PLAYGROUND_WATCH_QUIET": "0.15"}
# `slow` in 8 half-second ticks, not 60: caught running 3.5 s before its end (the kill
# lands a request after its first output), and a suite that replays it to the end takes
# 4 s, not 30.
SHORT_SLOW_ENV = {"ECHO_SLOW_TICKS": "8"}


@pytest.fixture
def watched(project: Path, runtime_base: Path) -> Iterator[Stack]:
    with stack_for(project, runtime_base, extra_env=WATCH_ENV) as s:
        s.start_daemon()
        yield s


async def suite_events(api: Api, suite_run_id: str, after: int | None = None,
                       until: str | None = None) -> list[dict[str, Any]]:
    """The suite run's progress events until its stream ends (or `until` a case state)."""
    params = {"after": str(after)} if after is not None else {}
    events: list[dict[str, Any]] = []
    async with api.http.get(f"{P}/suite-runs/{suite_run_id}/events", params=params) as resp:
        if resp.status == 204:
            return events
        assert resp.status == 200, await resp.text()
        async for ev in parse_sse(resp):
            events.append({"seq": ev.id, "event": ev.event, **ev.data})
            if until is not None and ev.data.get("state") == until and ev.data.get("case_run_id"):
                break
    return events


async def finished_report(api: Api, suite_run_id: str) -> dict[str, Any]:
    await suite_events(api, suite_run_id)
    report: dict[str, Any] = await api.ok("GET", f"suite-runs/{suite_run_id}")
    assert report["status"] != "running", report
    return report


async def run_suite(api: Api, suite_id: str) -> dict[str, Any]:
    started = await api.ok("POST", f"suites/{suite_id}/runs", None, 202)
    return await finished_report(api, started["suite_run_id"])


async def done(api: Api, session: str, text: str, **extra: Any) -> dict[str, Any]:
    run = await api.wait_status(await api.start_run(session, text, **extra))
    return run


async def cancelled_slow(api: Api, session: str) -> str:
    """A `slow` run cancelled once it has streamed: a case whose rerun streams a while."""
    slow = await api.start_run(session, "slow")
    await api.first_output(slow)
    await api.ok("DELETE", f"runs/{slow}")
    return slow


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new))


async def next_generation(api: Api, after: int) -> int:
    status = await eventually(lambda: api.ok("GET", "host"),
                              lambda h: h["state"] == "ready" and (h["generation"] or 0) > after,
                              "the Host restarted for the edit")
    return int(status["generation"])


async def five_cases(api: Api) -> tuple[list[dict[str, Any]], str]:
    """A stream, a data run, an ask chain with its answer, a three-turn session, a fail (in
    a session of its own, to be deleted later); the fail's session id."""
    session = await api.session()
    stream = await done(api, session, "stream hello there")
    data_body = {"parts": [{"kind": "text", "text": "data"},
                           {"kind": "data", "data": {"city": "Lyon", "n": 2}}]}
    data = await api.wait_status((await api.ok("POST", f"sessions/{session}/runs", data_body,
                                                202))["run_id"])
    ask = await done(api, session, "ask")
    assert ask["status"] == "input_required"
    answer = await api.wait_status((await api.ok(
        "POST", f"runs/{ask['id']}/resume", {"parts": [{"kind": "text", "text": "Ada"}]},
        202))["run_id"])
    assert answer["status"] == "completed"
    talk = await api.session()
    for word in ("one", "two", "three"):
        assert (await done(api, talk, f"say {word}"))["status"] == "completed"
    doomed = await api.session()
    fail = await done(api, doomed, "fail")
    assert fail["status"] == "failed"
    cases = [{"run_id": stream["id"]}, {"run_id": data["id"]}, {"run_id": ask["id"]},
             {"session_id": talk}, {"run_id": fail["id"]}]
    return cases, doomed


def by_kind(report: dict[str, Any]) -> list[str]:
    return [c["kind"] for c in report["cases"]]


async def test_a_suite_reports_exactly_what_an_edit_changed(watched: Stack) -> None:
    _, url = watched.start_front()
    api = Api.for_url(url)
    try:
        cases, doomed = await five_cases(api)
        suite = await api.ok("POST", "suites", {"name": "five", "cases": cases}, 201)
        assert [c["kind"] for c in suite["cases"]] == ["run", "run", "chain", "session", "run"]
        assert [c["turns"] for c in suite["cases"]] == [1, 1, 2, 3, 1]
        names = ["stream hello there", "data (+1 parts)", "ask", "say one", "fail"]
        assert [c["input_excerpt"] for c in suite["cases"]] == names

        first = await run_suite(api, suite["id"])
        assert first["status"] == "completed" and first["automatic_verdict"] is None
        assert [c["state"] for c in first["cases"]] == ["done"] * 5
        assert [c["status_after"] for c in first["cases"]] == [
            "completed", "completed", "completed", "completed", "failed"]
        assert first["summary"]["changed"] == 0, first["cases"]
        assert first["summary"]["status_moved_cases"] == 0
        # Each case row names its run: what it sends, how many turns, when it started.
        assert [c["input_excerpt"] for c in first["cases"]] == names
        assert [c["turns"] for c in first["cases"]] == [1, 1, 2, 3, 1]
        assert all(c["started_at"] >= first["created_at"] for c in first["cases"])
        # Each turn a normal run, tagged with its suite run and case; a session's turns share
        # one new context, a chain's answer resumes its question.
        session_case = first["cases"][3]
        turns = [await api.run(i) for i in session_case["run_ids"]]
        assert len(turns) == 3 and len({t["context_id"] for t in turns}) == 1
        assert {(t["suite_run_id"], t["case_id"]) for t in turns} == {
            (first["id"], session_case["case_id"])}
        assert [t["output"][0]["text"] for t in turns] == ["say one", "say two", "say three"]
        chain = [await api.run(i) for i in first["cases"][2]["run_ids"]]
        assert [c["status"] for c in chain] == ["input_required", "completed"]
        assert chain[1]["parent_run_id"] == chain[0]["id"]

        # A deleted source still runs: its input was copied; the baseline says "deleted".
        await api.ok("DELETE", f"sessions/{doomed}")
        gen = (await api.ok("GET", "host"))["generation"]
        agent = watched.project / "app" / "agent.py"
        edit(agent, 'f"Hello, {answer}!"', 'f"Welcome, {answer}!"')
        edit(agent, "await self._stream_text(updater, first_text(context.message).strip())",
             "await self._stream_text(updater, first_text(context.message).strip().upper())")
        edit(agent, 'hello = "hello" in text.lower()', 'hello = "hola" in text.lower()')
        await next_generation(api, gen)

        second = await run_suite(api, suite["id"])
        assert second["status"] == "completed"
        rows = second["cases"]
        assert [r["changed"] for r in rows] == [True, False, True, True, False]
        assert [r["text_changed"] for r in rows] == [False, False, True, True, False]
        assert rows[2]["text_diff_lines"] == 2 and rows[3]["text_diff_lines"] == 6
        moved = [(r["case_id"], s["evaluator"], s["delta"], s["pass_before"], s["pass_after"])
                 for r in rows for s in r["scores"] if s["delta"] or
                 s["pass_before"] != s["pass_after"]]
        assert moved == [(rows[0]["case_id"], "mentions_hello", -1.0, "pass", "fail")]
        assert all(r["status_moved"] is False and r["data_changes"] == [] for r in rows)
        assert rows[4]["baseline"]["deleted"] is True and rows[4]["status_after"] == "failed"
        summary = second["summary"]
        assert summary["changed"] == 3 and summary["status_moved_cases"] == 0
        hello = next(e for e in summary["evaluators"] if e["evaluator"] == "mentions_hello")
        assert (hello["mean_before"], hello["mean_after"]) == (1.0, 0.0)
        assert (hello["pass_to_fail"], hello["fail_to_pass"]) == (1, 0)
        assert second["code_fingerprint"] not in second["baseline_fingerprints"]
        assert first["code_fingerprint"] in second["baseline_fingerprints"]

        # Opening a row: the whole Compare, the diff included.
        opened = await api.ok("GET", f"suite-runs/{second['id']}/cases/{rows[2]['case_id']}")
        assert "+Welcome, Ada!" in opened["compare"]["text"]["unified_diff"]

        # "Make this the baseline": the next run against the same code changes nothing.
        await api.ok("PATCH", f"suites/{suite['id']}", {"baseline_suite_run_id": second["id"]})
        third = await run_suite(api, suite["id"])
        assert third["summary"]["changed"] == 0, third["cases"]
        # Three suite runs, one session: the suite's runs gather there, one title.
        assert first["session_id"] == second["session_id"] == third["session_id"]
        titled = [s for s in (await api.ok("GET", "sessions?limit=1000"))["sessions"]
                  if s["title"] == "suite five"]
        assert [s["id"] for s in titled] == [first["session_id"]]
        assert titled[0]["run_count"] == 3 * 8  # eight runs a suite run (a chain, a session)
        # That session deleted, the next suite run makes the suite a new one.
        await api.ok("DELETE", f"sessions/{first['session_id']}")
        fourth = await run_suite(api, suite["id"])
        assert fourth["session_id"] != first["session_id"]
        made = await api.ok("GET", f"sessions/{fourth['session_id']}")
        assert made["title"] == "suite five" and made["metadata"] == {"suite_id": suite["id"]}
    finally:
        await api.close()


async def test_manual_run_during_a_suite_is_refused_with_both_ids_and_cancel_skips_the_rest(
        api: Api) -> None:
    session = await api.session()
    slow = await cancelled_slow(api, session)
    stream = await done(api, session, "stream quick")
    suite = await api.ok("POST", "suites", {"name": "cancel me", "cases": [
        {"run_id": stream["id"]}, {"run_id": slow}, {"run_id": stream["id"]}]}, 201)
    started = await api.ok("POST", f"suites/{suite['id']}/runs", None, 202)
    srun = started["suite_run_id"]
    # Wait for the slow case's run to be under way.
    events = await suite_events(api, srun, until="running")
    while events[-1].get("position") != 1:
        events += await suite_events(api, srun, after=events[-1]["seq"], until="running")
    slow_case_run = events[-1]["case_run_id"]
    await api.first_output(slow_case_run)

    code, doc = await api.call("POST", f"sessions/{session}/runs",
                               {"parts": [{"kind": "text", "text": "stream hi"}]})
    assert code == 409, doc
    assert doc["detail"]["error"] == "active_run_conflict"
    assert doc["detail"]["active_run_id"] == slow_case_run
    assert doc["detail"]["suite_run_id"] == srun
    code, doc = await api.call("POST", f"suites/{suite['id']}/runs")
    assert code == 409 and doc["detail"]["suite_run_id"] == srun, doc

    code, doc = await api.call("DELETE", f"suites/{suite['id']}")
    assert code == 409 and doc["detail"]["error"] == "suite_run_active", doc
    code, doc = await api.call("DELETE", "sessions")  # delete-all waits for the suite too
    assert code == 409 and doc["detail"]["suite_run_id"] == srun, doc

    cancelled = await api.ok("DELETE", f"suite-runs/{srun}")
    assert cancelled["status"] == "cancelled"
    report = await finished_report(api, srun)
    assert [c["state"] for c in report["cases"]] == ["done", "skipped", "skipped"]
    assert [c["skipped_for"] for c in report["cases"]] == [None, "user_cancelled",
                                                           "user_cancelled"]
    assert report["cases"][2]["run_ids"] == []  # never started
    assert (await api.run(slow_case_run))["status"] == "cancelled"
    # The project is free again.
    assert (await done(api, session, "stream free"))["status"] == "completed"
    code, doc = await api.call("DELETE", f"suite-runs/{srun}")
    assert code == 409 and doc["detail"]["error"] == "suite_run_not_active"
    # Deleting the suite takes its reports (and their progress events) with it.
    assert (await api.ok("DELETE", f"suites/{suite['id']}"))["deleted"] == suite["id"]
    code, doc = await api.call("GET", f"suite-runs/{srun}")
    assert code == 404 and doc["detail"]["error"] == "suite_run_not_found"
    code, _ = await api.call("GET", f"suite-runs/{srun}/events")
    assert code == 404


async def test_run_on_save_runs_once_per_revision(watched: Stack) -> None:
    api = Api.for_socket(str(watched.settings.socket_path))
    try:
        session = await api.session()
        stream = await done(api, session, "stream hello")
        suite = await api.ok("POST", "suites", {"name": "on save", "run_on_save": True,
                                                "cases": [{"run_id": stream["id"]}]}, 201)
        other = await api.ok("POST", "suites", {"name": "not on save",
                                                "cases": [{"run_id": stream["id"]}]}, 201)
        gen = (await api.ok("GET", "host"))["generation"]
        agent = watched.project / "app" / "agent.py"
        edit(agent, 'f"Hello, {answer}!"', 'f"Welcome, {answer}!"')
        gen = await next_generation(api, gen)
        runs = await eventually(lambda: api.ok("GET", f"suites/{suite['id']}/runs"),
                                lambda d: len(d["suite_runs"]) == 1, "a run on save")
        auto = runs["suite_runs"][0]
        assert auto["trigger"] == "save"
        report = await finished_report(api, auto["id"])
        assert report["status"] == "completed" and report["summary"]["done"] == 1
        assert (await api.ok("GET", f"suites/{other['id']}/runs"))["suite_runs"] == []
        # A manual restart on the same revision is no save: nothing runs again.
        await api.ok("POST", "host/restart")
        await next_generation(api, gen)
        listed = await api.ok("GET", "suites")
        assert listed["runs_on_save"] == 1
        assert len((await api.ok("GET", f"suites/{suite['id']}/runs"))["suite_runs"]) == 1
        # A new revision: once more.
        edit(agent, 'f"Welcome, {answer}!"', 'f"Hi, {answer}!"')
        await eventually(lambda: api.ok("GET", f"suites/{suite['id']}/runs"),
                         lambda d: len(d["suite_runs"]) == 2, "a second run on save")
        assert (await api.ok("GET", "suites"))["runs_on_save"] == 2
    finally:
        await api.close()


def db_rows(stack: Stack, sql: str) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(stack.settings.db_path)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


@pytest.fixture
def short_slow(project: Path, runtime_base: Path) -> Iterator[Stack]:
    with stack_for(project, runtime_base, extra_env=SHORT_SLOW_ENV) as s:
        s.start_daemon()
        yield s


async def test_daemon_sigkill_mid_suite_interrupts_it_and_keeps_finished_cases(
        short_slow: Stack) -> None:
    daemon = short_slow
    api = Api.for_socket(str(daemon.settings.socket_path))
    try:
        session = await api.session()
        stream = await done(api, session, "stream hello there")
        slow = await cancelled_slow(api, session)
        suite = await api.ok("POST", "suites", {"name": "killed", "cases": [
            {"run_id": stream["id"]}, {"run_id": slow}, {"run_id": stream["id"]}]}, 201)
        srun = (await api.ok("POST", f"suites/{suite['id']}/runs", None, 202))["suite_run_id"]
        events = await suite_events(api, srun, until="running")
        while events[-1].get("position") != 1:
            events += await suite_events(api, srun, after=events[-1]["seq"], until="running")
        await api.first_output(events[-1]["case_run_id"])
        before = await api.ok("GET", f"suite-runs/{srun}")
        assert before["cases"][0]["state"] == "done"
    finally:
        await api.close()
    assert daemon.daemon is not None
    daemon.daemon.signal(signal.SIGKILL)
    daemon.daemon.wait(10)
    daemon.start_daemon()
    api = Api.for_socket(str(daemon.settings.socket_path))
    try:
        after = await api.ok("GET", f"suite-runs/{srun}")
        assert (after["status"], after["reason"]) == ("interrupted", "daemon_restarted")
        assert after["cases"][0] == before["cases"][0]  # the finished case, as it was
        assert [c["state"] for c in after["cases"]] == ["done", "skipped", "skipped"]
        assert after["cases"][1]["skipped_for"] == "daemon_restarted"
        interrupted_run = await api.run(after["cases"][1]["run_ids"][0])
        assert interrupted_run["status"] == "interrupted"
        # The progress stream ends with the interruption, replayed from its start.
        events = await suite_events(api, srun)
        assert events[-1]["event"] == "suite.status" and events[-1]["status"] == "interrupted"
        # No case ran twice: one run per started case, none for the third.
        per_case = db_rows(daemon, "SELECT case_id, COUNT(*) FROM runs WHERE suite_run_id = "
                                   f"'{srun}' GROUP BY case_id")
        assert sorted(n for _, n in per_case) == [1, 1]
        # A new suite run starts clean.
        fresh = await run_suite(api, suite["id"])
        assert fresh["status"] == "completed"
        assert [c["state"] for c in fresh["cases"]] == ["done"] * 3
    finally:
        await api.close()


async def test_bad_suites_are_refused_and_nothing_is_written(api: Api) -> None:
    session = await api.session()
    run = await done(api, session, "stream hi")
    one = [{"run_id": run["id"]}]
    refused = [
        ({"name": "x" * 201, "cases": one}, "invalid_name"),
        ({"name": "empty", "cases": []}, "empty_suite"),
        ({"name": "many", "cases": one * 1001}, "too_many_cases"),
        ({"name": "ghost", "cases": [{"run_id": "run_nope"}]}, "unknown_run"),
        ({"name": "ghost", "cases": [{"session_id": "ses_nope"}]}, "unknown_session"),
        ({"name": "both", "cases": [{"run_id": run["id"], "session_id": session}]},
         "invalid_case"),
        ({"name": "extra", "cases": one, "verdict": True}, "unknown_field"),
    ]
    for body, code in refused:
        status, doc = await api.call("POST", "suites", body)
        assert (status, doc["detail"]["error"]) == (400, code), (body, doc)
    assert (await api.ok("GET", "suites"))["suites"] == []
    suite = await api.ok("POST", "suites", {"name": "ok", "cases": one}, 201)
    status, doc = await api.call("POST", "suites", {"name": "ok", "cases": one})
    assert (status, doc["detail"]["error"]) == (409, "suite_name_taken")
    status, doc = await api.call("GET", "suites/sui_nope")
    assert (status, doc["detail"]["error"]) == (404, "suite_not_found")
    status, doc = await api.call("GET", "suite-runs/srun_nope")
    assert (status, doc["detail"]["error"]) == (404, "suite_run_not_found")
    # A repeat out of range and a file path outside playground/suites/ change nothing.
    for body in ({"repeat": 0}, {"repeat": 101}, {"repeat": "3"}, {"repeat": True}):
        status, doc = await api.call("POST", f"suites/{suite['id']}/runs", body)
        assert (status, doc["detail"]["error"]) == (400, "invalid_repeat"), body
    for path in ("../x.json", "playground/suites/files/a.json", "playground/x.json",
                 "playground/suites/a.txt", "/etc/passwd"):
        status, doc = await api.call("POST", f"suites/{suite['id']}/file", {"path": path})
        assert (status, doc["detail"]["error"]) == (400, "invalid_suite_path"), path
    assert (await api.ok("GET", f"suites/{suite['id']}/runs"))["suite_runs"] == []
    assert (await api.ok("GET", f"suites/{suite['id']}"))["file_path"] is None
    # Delete-all removes suites with the rest of history.
    deleted = await api.ok("DELETE", "sessions")
    assert deleted["deleted"]["suites"] == 1
    status, _ = await api.call("GET", f"suites/{suite['id']}")
    assert status == 404


async def test_a_suite_keeps_its_files_and_travels_in_a_bundle_with_new_ids(api: Api) -> None:
    import base64
    session = await api.session()
    body = {"parts": [{"kind": "text", "text": "stream hello file"},
                      {"kind": "file", "bytes_base64": base64.b64encode(b"pinned\n").decode(),
                       "name": "pin.txt", "mime": "text/plain"}]}
    source = await api.wait_status((await api.ok("POST", f"sessions/{session}/runs", body,
                                                 202))["run_id"])
    sha = source["input"]["parts"][1]["sha256"]
    suite = await api.ok("POST", "suites", {"name": "files", "cases": [
        {"run_id": source["id"]}]}, 201)
    # The source goes; the case's copy of its input (and its file, by hash) stays.
    await api.ok("DELETE", f"sessions/{session}")
    report = await run_suite(api, suite["id"])
    assert report["status"] == "completed" and report["cases"][0]["baseline"]["deleted"]
    assert report["cases"][0]["state"] == "done", report
    replayed = await api.run(report["cases"][0]["run_ids"][0])
    assert replayed["status"] == "completed"
    assert replayed["input"]["parts"][1]["sha256"] == sha

    # Its results as the baselines: the baseline now names a run the bundle holds.
    await api.ok("PATCH", f"suites/{suite['id']}", {"baseline_suite_run_id": report["id"]})

    bundle = await api.ok("POST", "bundles/export", {})
    assert [s["name"] for s in bundle["suites"]] == ["files"]
    assert sha in bundle["blobs"]
    # A bundle whose suites a check refuses writes nothing at all.
    import copy
    for tamper in ("kind", "blob", "null"):
        bad = copy.deepcopy(bundle)
        if tamper == "kind":
            bad["suites"][0]["cases"][0]["kind"] = "nope"
        elif tamper == "blob":
            bad["suites"][0]["cases"][0]["turns"][0]["input"]["parts"][1]["sha256"] = "0" * 64
        else:
            bad["suites"] = None
        status, doc = await api.call("POST", "bundles/import", bad)
        assert status == 400, (tamper, doc)
    assert len((await api.ok("GET", "suites"))["suites"]) == 1
    wiped = await api.ok("DELETE", "sessions")
    assert wiped["deleted"]["suites"] == 1 and wiped["blobs_removed"] >= 1
    imported = await api.ok("POST", "bundles/import", bundle, 201)
    new_id = imported["suites"][suite["id"]]
    assert new_id != suite["id"]
    copy = await api.ok("GET", f"suites/{new_id}")
    case = copy["cases"][0]
    assert case["id"] != suite["cases"][0]["id"]
    # Its baseline names the imported copy of the run it was compared with.
    assert case["baseline"]["run_id"] == imported["runs"][replayed["id"]]
    assert case["baseline"]["deleted"] is False
    again = await run_suite(api, new_id)
    assert again["status"] == "completed" and again["summary"]["changed"] == 0
    # The same bundle again: a second suite, its name numbered.
    twice = await api.ok("POST", "bundles/import", bundle, 201)
    assert (await api.ok("GET", f"suites/{twice['suites'][suite['id']]}"))["name"] == "files (2)"


async def test_a_flow_suite_reports_a_data_change_by_json_pointer(tmp_path: Path,
                                                                  runtime_base: Path) -> None:
    import shutil

    from tests.support.procs import REPO
    project = tmp_path / "flow"
    shutil.copytree(REPO / "examples" / "flow_project", project,
                    ignore=shutil.ignore_patterns(".llamon", "__pycache__"))
    with stack_for(project, runtime_base, extra_env=WATCH_ENV) as stack:
        stack.start_daemon()
        _, url = stack.start_front()
        api = Api.for_url(url)
        try:
            session = await api.session()
            body = {"parts": [{"kind": "data", "data": {
                "schema": "approval.v1", "requestId": "r1", "amount": 500,
                "requester": {"name": "Ada"}}}]}
            source = await api.wait_status((await api.ok(
                "POST", f"sessions/{session}/runs", body, 202))["run_id"])
            assert source["status"] == "completed", source
            suite = await api.ok("POST", "suites", {"name": "flow", "cases": [
                {"run_id": source["id"]}]}, 201)
            same = await run_suite(api, suite["id"])
            assert same["status"] == "completed" and same["summary"]["changed"] == 0
            gen = (await api.ok("GET", "host"))["generation"]
            edit(project / "app" / "nodes.py", "AUTO_APPROVE_LIMIT = 1000",
                 "AUTO_APPROVE_LIMIT = 100")
            await next_generation(api, gen)
            moved = await run_suite(api, suite["id"])
            row = moved["cases"][0]
            assert row["changed"] and not row["status_moved"]
            assert [p.rsplit("/", 1)[-1] for p in row["data_changes"]] == ["decision"], row
        finally:
            await api.close()


async def test_a_new_revision_mid_suite_ends_it_runtime_restarted(watched: Stack) -> None:
    api = Api.for_socket(str(watched.settings.socket_path))
    try:
        session = await api.session()
        slow = await cancelled_slow(api, session)
        stream = await done(api, session, "stream hello")
        suite = await api.ok("POST", "suites", {"name": "revision", "cases": [
            {"run_id": stream["id"]}, {"run_id": slow}, {"run_id": stream["id"]}]}, 201)
        srun = (await api.ok("POST", f"suites/{suite['id']}/runs", None, 202))["suite_run_id"]
        events = await suite_events(api, srun, until="running")
        while events[-1].get("position") != 1:
            events += await suite_events(api, srun, after=events[-1]["seq"], until="running")
        await api.first_output(events[-1]["case_run_id"])
        agent = watched.project / "app" / "agent.py"
        edit(agent, 'f"Hello, {answer}!"', 'f"Welcome, {answer}!"')
        report = await finished_report(api, srun)
        assert (report["status"], report["reason"]) == ("failed", "runtime_restarted")
        assert [c["state"] for c in report["cases"]] == ["done", "skipped", "skipped"]
        assert report["cases"][1]["skipped_for"] == "runtime_restarted"
        assert report["summary"]["done"] == 1  # only the first revision's case is counted
        cut = await api.run(report["cases"][1]["run_ids"][0])
        assert (cut["status"], cut["reason"]) == ("failed", "runtime_restarted")
        assert report["cases"][2]["run_ids"] == []
    finally:
        await api.close()


async def test_a_clean_daemon_stop_mid_suite_interrupts_it_without_a_next_case(
        daemon: Stack) -> None:
    api = Api.for_socket(str(daemon.settings.socket_path))
    try:
        session = await api.session()
        stream = await done(api, session, "stream hello")
        slow = await cancelled_slow(api, session)
        suite = await api.ok("POST", "suites", {"name": "stopped", "cases": [
            {"run_id": slow}, {"run_id": stream["id"]}]}, 201)
        srun = (await api.ok("POST", f"suites/{suite['id']}/runs", None, 202))["suite_run_id"]
        events = await suite_events(api, srun, until="running")
        await api.first_output(events[-1]["case_run_id"])
    finally:
        await api.close()
    assert daemon.daemon is not None
    daemon.daemon.signal(signal.SIGTERM)
    assert daemon.daemon.wait(30) == 0
    assert db_rows(daemon, f"SELECT status, reason FROM suite_runs WHERE id = '{srun}'") == [
        ("interrupted", "studio_shutdown")]
    assert db_rows(daemon, "SELECT state FROM suite_results WHERE suite_run_id = "
                           f"'{srun}' ORDER BY position") == [("skipped",), ("skipped",)]
    # The second case never started: one run in all, the first case's, interrupted.
    assert db_rows(daemon, f"SELECT status, reason FROM runs WHERE suite_run_id = '{srun}'") \
        == [("interrupted", "studio_shutdown")]
