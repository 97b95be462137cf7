"""The CLI does what the page does: resume, compare, export, import, delete, list, version;
and `up` says what it serves before serving it. Real daemons; exit codes: 0 ok, 1 error,
2 usage, 3 daemon not running, 4 conflict."""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import orjson
import psutil
import pytest

from llamon_playground.cli.main import build_parser
from tests.support.door import cli, running_daemon
from tests.support.procs import REPO, Proc, Stack, copy_example, stack_for, wait_for


@pytest.fixture(scope="module")
def ctl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    yield from running_daemon(tmp_path_factory, "more")


def ok(stack: Stack, *args: str, opts: tuple[str, ...] = ()) -> str:
    result = cli(stack, *args, str(stack.project), *opts)
    assert result.returncode == 0, (args, result.stdout, result.stderr)
    return result.stdout


def sent(stack: Stack, session: str, text: str) -> str:
    """A followed run's id."""
    out = ok(stack, "send", session, text, opts=("--follow", "--json"))
    return str(orjson.loads(out.splitlines()[0])["run_id"])


def _parsers(parser: argparse.ArgumentParser) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    yield parser.prog, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _parsers(sub)


def test_version_and_help_on_every_argument(ctl: Stack) -> None:
    version = cli(ctl, "--version")
    assert version.returncode == 0 and re.fullmatch(r"llamon-playground \S+\n", version.stdout)
    commands = dict(_parsers(build_parser()))
    assert {f"llamon-playground {c}" for c in (
        "resume", "compare", "export", "import", "delete", "list")} <= set(commands)
    bare = [(prog, action.dest) for prog, parser in commands.items()
            for action in parser._actions
            if action.help is None and not isinstance(action, argparse._SubParsersAction)]
    assert bare == []


def test_resume_answers_a_run_that_asks(ctl: Stack) -> None:
    session = ok(ctl, "new-session").strip()
    asked = sent(ctl, session, "ask")
    result = cli(ctl, "resume", asked, "Ada", str(ctl.project), "--follow")
    assert result.returncode == 0, result.stderr
    assert "Ada" in result.stdout and "completed" in result.stderr
    again = cli(ctl, "resume", asked, "Ada", str(ctl.project))
    assert again.returncode == 4 and "run_not_resumable" in again.stderr, again


def test_compare_prints_the_diff_and_the_score_table(ctl: Stack) -> None:
    session = ok(ctl, "new-session").strip()
    left, right = sent(ctl, session, "stream one two"), sent(ctl, session, "stream one three")
    text = ok(ctl, "compare", left, right)
    assert f"left   {left}  completed" in text and f"right  {right}  completed" in text
    assert "-one two" in text and "+one three" in text
    doc = orjson.loads(ok(ctl, "compare", left, right, opts=("--json",)))
    assert doc["left"]["run_id"] == left and doc["text"]["same"] is False
    for row in doc["scores"]:  # the table names every evaluator the JSON has
        assert row["evaluator"] in text
    missing = cli(ctl, "compare", left, "run_nope", str(ctl.project))
    assert missing.returncode == 1 and "run_not_found" in missing.stderr


def test_export_import_and_delete(ctl: Stack, tmp_path: Path) -> None:
    session = ok(ctl, "new-session").strip()
    run_id = sent(ctl, session, "stream kept for later")
    bundle = tmp_path / "repro.json"
    result = cli(ctl, "export", str(ctl.project), "--session", session, "-o", str(bundle))
    assert result.returncode == 0, result.stderr
    doc = orjson.loads(bundle.read_bytes())
    assert [r["id"] for r in doc["runs"]] == [run_id]
    imported = orjson.loads(ok(ctl, "import", str(bundle), opts=("--json",)))
    new_session = imported["sessions"][session]
    assert new_session != session and run_id in imported["runs"]
    assert "imported 1 sessions and 1 runs" in ok(ctl, "import", str(bundle))
    by_run = tmp_path / "one.json"
    ok(ctl, "export", opts=("--run", run_id, "-o", str(by_run)))
    assert [r["id"] for r in orjson.loads(by_run.read_bytes())["runs"]] == [run_id]
    assert f"deleted session {new_session}" in ok(ctl, "delete", new_session)
    gone = cli(ctl, "delete", new_session, str(ctl.project))
    assert gone.returncode == 1 and "session_not_found" in gone.stderr
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    refused = cli(ctl, "import", str(bad), str(ctl.project))
    assert refused.returncode == 1 and refused.stderr
    assert cli(ctl, "export", str(ctl.project)).returncode == 2  # -o is required


def test_list_shows_every_daemon_and_none_when_none_runs(tmp_path: Path,
                                                         runtime_base: Path) -> None:
    first, second = copy_example(tmp_path / "a"), copy_example(tmp_path / "b")
    with stack_for(first, runtime_base) as one, stack_for(second, runtime_base) as two:
        assert orjson.loads(cli(one, "list", "--json").stdout) == []
        none = cli(one, "list")
        assert none.returncode == 0 and none.stdout == "" and "no daemon runs" in none.stderr
        one.start_daemon()
        two.start_daemon()
        listed = orjson.loads(cli(one, "list", "--json").stdout)
        assert {d["project"] for d in listed} == {str(one.project), str(two.project)}
        for d in listed:
            stack = one if d["project"] == str(one.project) else two
            assert d["socket"] == str(stack.settings.socket_path)
            assert d["pid"] == stack.daemon.pid if stack.daemon else False
            assert d["host_state"] == "stopped" and d["active_run_id"] is None
        text = cli(one, "list").stdout
        assert str(one.project) in text and str(two.project) in text


def test_up_refuses_a_folder_that_is_not_a_project(stack: Stack, tmp_path: Path) -> None:
    empty = tmp_path / "not_a_project"
    empty.mkdir()
    result = cli(stack, "up", str(empty), "--port", "0")
    assert result.returncode == 2
    assert "is not a llamon project" in result.stderr and "[tool.llamon]" in result.stderr
    assert "--allow-empty" in result.stderr and "http://" not in result.stdout
    assert not stack.settings.discovery_path.exists()
    # With consent it is served (detached here, then stopped).
    allowed = cli(stack, "up", str(empty), "--port", "0", "--allow-empty", "--detach")
    try:
        assert allowed.returncode == 0, allowed.stderr
        assert "open in a browser: http" in allowed.stdout
    finally:
        assert cli(stack, "stop", str(empty)).returncode == 0


def test_an_explicit_stop_ends_up_and_a_crash_is_restarted(stack: Stack) -> None:
    up = Proc([sys.executable, "-m", "llamon_playground", "up", str(stack.project), "--port",
               "0"], stack.env, stack.runtime_base / "up.log", REPO)
    try:
        wait_for(lambda: "open in a browser: " in up.output(), 30, "the front of `up`")
        first = int(re.findall(r"started the daemon \(pid (\d+)\)", up.output())[0])
        # Its log is private like the rest of the runtime directory.
        assert (stack.settings.runtime_dir / "daemon.log").stat().st_mode & 0o777 == 0o600
        link = up.output().split("open in a browser: ")[1].split()[0]
        url, token = link.split("?token=")
        # A crash: the daemon is killed, and `up` starts another, saying so; its front stays.
        os.kill(first, signal.SIGKILL)
        wait_for(lambda: "started the daemon again (pid" in up.output(), 30,
                 "`up` to start the daemon again")
        assert f"the daemon (pid {first}) died (killed by SIGKILL)" in up.output()

        async def health() -> int:
            async with aiohttp.ClientSession() as http, http.get(
                    url + "health", headers={"Authorization": f"Bearer {token}"}) as resp:
                return resp.status
        wait_for(lambda: asyncio.run(health()) == 200, 30, "the front to reach the new daemon")
        assert up.popen.poll() is None
        # An explicit stop of the daemon ends `up`, saying why.
        assert cli(stack, "stop", str(stack.project)).returncode == 0
        assert up.wait(30) == 0
        assert "was stopped (`llamon-playground stop` or a SIGTERM)" in up.output()
    finally:
        up.stop()
        if stack.daemon is not None and psutil.pid_exists(stack.daemon.pid):
            stack.daemon.signal(signal.SIGTERM)
