"""The control commands end to end, with their exit codes: 0 ok, 1 error, 2 usage, 3 daemon
not running, 4 conflict. They talk to the daemon's socket; no front runs here."""

from __future__ import annotations

import signal
import sys
from collections.abc import Iterator

import orjson
import pytest

from tests.support.api import Api
from tests.support.door import cli, running_daemon
from tests.support.procs import REPO, Proc, Stack, wait_for


@pytest.fixture(scope="module")
def ctl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    yield from running_daemon(tmp_path_factory, "ctl", {"ECHO_CHUNK_DELAY_MS": "5"})


def ok(stack: Stack, *args: str, opts: tuple[str, ...] = ()) -> str:
    """`llamon-playground ARGS PROJECT OPTS`, which must succeed."""
    result = cli(stack, *args, str(stack.project), *opts)
    assert result.returncode == 0, (args, result.stdout, result.stderr)
    return result.stdout


def as_json(stack: Stack, *args: str, opts: tuple[str, ...] = ()) -> object:
    return orjson.loads(ok(stack, *args, opts=(*opts, "--json")))


def new_session(stack: Stack) -> str:
    return ok(stack, "new-session", opts=("--title", "cli")).strip()


@pytest.mark.parametrize("args", [("host", "status"), ("host", "start"), ("host", "logs"),
                                  ("runs",), ("cancel", "run_x"), ("send", "ses_x", "hi"),
                                  ("new-session",), ("stop",), ("label", "run_x", "t"),
                                  ("rerun", "run_x")])
def test_without_a_daemon_every_command_exits_3(stack: Stack, args: tuple[str, ...]) -> None:
    result = cli(stack, *args, str(stack.project))
    assert result.returncode == 3 and "no daemon serves" in result.stderr


@pytest.mark.parametrize("args", [("cancel",), ("host", "frobnicate"), ("runs", "--bogus"),
                                  ("send", "only-a-session"), ("label", "run_x"), ("rerun",)])
def test_usage_errors_exit_2(stack: Stack, args: tuple[str, ...]) -> None:
    assert cli(stack, *args).returncode == 2


def test_host_start_restart_stop_and_status(ctl: Stack) -> None:
    started = as_json(ctl, "host", "start")
    assert isinstance(started, dict) and started["state"] == "ready"
    restarted = as_json(ctl, "host", "restart")
    assert isinstance(restarted, dict) and restarted["generation"] == started["generation"] + 1
    assert "state:      ready" in ok(ctl, "host", "status")
    stopped = as_json(ctl, "host", "stop")
    assert isinstance(stopped, dict) and stopped["state"] == "stopped"


def test_host_logs_prints_and_follows_the_hosts_output(ctl: Stack) -> None:
    ok(ctl, "host", "start")
    assert "echo_agent ready on http://127.0.0.1:" in ok(ctl, "host", "logs")
    lines = [orjson.loads(ln) for ln in ok(ctl, "host", "logs", opts=("--json",)).splitlines()]
    assert lines and all({"offset", "text", "generation"} <= set(ln) for ln in lines)
    follow = Proc([sys.executable, "-m", "llamon_playground", "host", "logs", str(ctl.project),
                   "-f"], ctl.env, ctl.runtime_base / "logs-f.log", REPO)
    try:
        before = wait_for(lambda: follow.output().count("echo_agent ready"), 30, "the backlog")
        ok(ctl, "host", "restart")  # a new generation prints its ready line: followed live
        wait_for(lambda: follow.output().count("echo_agent ready") > before, 30, "a new line")
        follow.signal(signal.SIGINT)
        assert follow.wait(10) == 0
    finally:
        follow.stop()


def test_send_follow_prints_the_answer_as_it_streams(ctl: Stack) -> None:
    session = new_session(ctl)
    result = cli(ctl, "send", session, "stream alpha beta gamma", str(ctl.project), "--follow")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "alpha beta gamma\n"
    assert result.stderr.strip().endswith("completed")


def test_send_follow_json_prints_every_event(ctl: Stack) -> None:
    session = new_session(ctl)
    result = cli(ctl, "send", session, "stream one two", str(ctl.project), "--follow", "--json")
    assert result.returncode == 0
    docs = [orjson.loads(ln) for ln in result.stdout.splitlines()]
    assert set(docs[0]) == {"run_id", "status"}  # the 202 answer, then the events
    assert [d["text"] for d in docs if d.get("kind") == "output.delta"] == ["one ", "two"]
    assert docs[-1]["kind"] == "run.status" and docs[-1]["status"] == "completed"


def test_send_follow_of_a_failing_run_exits_1_saying_why(ctl: Stack) -> None:
    result = cli(ctl, "send", new_session(ctl), "fail", str(ctl.project), "--follow")
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert " failed (host_error): " in last and "echo_agent was asked to fail" in last, last


def test_send_follow_of_a_run_that_asks_prints_its_question(ctl: Stack) -> None:
    result = cli(ctl, "send", new_session(ctl), "ask", str(ctl.project), "--follow")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith("What is your name?")
    assert "input_required" in result.stderr and "llamon-playground resume " in result.stderr


def test_label_and_rerun_with_an_edited_text(ctl: Stack) -> None:
    session = new_session(ctl)
    followed = ok(ctl, "send", session, "stream first words", opts=("--follow", "--json"))
    run_id = orjson.loads(followed.splitlines()[0])["run_id"]
    assert ok(ctl, "label", run_id, "baseline").strip() == f"{run_id} baseline"
    labelled = as_json(ctl, "label", run_id, "baseline", opts=("--note", "the first"))
    assert isinstance(labelled, dict) and labelled["note"] == "the first"
    result = cli(ctl, "rerun", run_id, str(ctl.project), "--text", "stream other words",
                 "--label", "edited", "--follow")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "other words\n"
    runs = as_json(ctl, "runs", opts=("--session", session))
    assert isinstance(runs, dict)
    rerun = runs["runs"][-1]
    assert rerun["rerun_of"] == run_id and rerun["label"] == "edited"
    assert rerun["edited_fields"] == ["parts"]
    plain = as_json(ctl, "rerun", run_id)
    assert isinstance(plain, dict) and plain["status"] == "queued"
    assert ok(ctl, "label", run_id, "").strip() == f"{run_id} -"  # "" clears
    missing = cli(ctl, "label", "run_nope", "x", str(ctl.project))
    assert missing.returncode == 1 and "run_not_found" in missing.stderr
    too_long = cli(ctl, "label", run_id, "x" * 201, str(ctl.project))
    assert too_long.returncode == 1 and "invalid_label" in too_long.stderr


def test_conflicts_exit_4_and_cancel_waits(ctl: Stack) -> None:
    session = new_session(ctl)
    started = as_json(ctl, "send", session, "slow")
    assert isinstance(started, dict)
    run_id = started["run_id"]
    busy = cli(ctl, "send", session, "stream again", str(ctl.project), "--json")
    assert busy.returncode == 4
    assert orjson.loads(busy.stdout)["detail"] == {
        "error": "active_run_conflict", "active_run_id": run_id,
        "message": orjson.loads(busy.stdout)["detail"]["message"]}
    assert cli(ctl, "host", "stop", str(ctl.project)).returncode == 4
    cancelled = cli(ctl, "cancel", run_id, str(ctl.project), "--wait")
    assert cancelled.returncode == 0 and cancelled.stdout.strip() == f"{run_id} cancelled"
    again = cli(ctl, "cancel", run_id, str(ctl.project))
    assert again.returncode == 4 and "run_not_active" in again.stderr
    unknown = cli(ctl, "cancel", "run_nope", str(ctl.project))
    assert unknown.returncode == 1 and "run_not_found" in unknown.stderr


def test_runs_lists_all_or_one_session(ctl: Stack) -> None:
    first, second = new_session(ctl), new_session(ctl)
    for session in (first, second):
        assert cli(ctl, "send", session, "stream x", str(ctl.project), "--follow").returncode == 0
    listed = as_json(ctl, "runs")
    assert isinstance(listed, dict)
    assert {first, second} <= {run["session_id"] for run in listed["runs"]}
    one = as_json(ctl, "runs", opts=("--session", first))
    assert isinstance(one, dict) and {r["session_id"] for r in one["runs"]} == {first}
    assert first in ok(ctl, "runs")
    missing = cli(ctl, "runs", str(ctl.project), "--session", "ses_nope")
    assert missing.returncode == 1 and "session_not_found" in missing.stderr


async def test_stop_shuts_the_daemon_down_gracefully(daemon: Stack) -> None:
    api = Api.for_socket(str(daemon.settings.socket_path))
    try:
        run_id = await api.start_run(await api.session(), "slow")
        await api.first_output(run_id)
    finally:
        await api.close()
    result = cli(daemon, "stop", str(daemon.project))
    assert result.returncode == 0 and "stopped the daemon" in result.stdout
    assert daemon.daemon is not None and daemon.daemon.wait(10) == 0
    assert not daemon.settings.discovery_path.exists()
    assert cli(daemon, "stop", str(daemon.project)).returncode == 3
    daemon.start_daemon()
    runs = as_json(daemon, "runs")
    assert isinstance(runs, dict)
    assert [(r["status"], r["reason"]) for r in runs["runs"]] == [("interrupted",
                                                                   "studio_shutdown")]
