"""`llamon-playground suite ...` end to end with its exit codes: 0 when every case ended as
its baseline did, 5 when a status moved (never from scores). The real daemon and example
Host; the CLI as a process, through the typed client."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from tests.support.door import cli
from tests.support.procs import Stack, stack_for, wait_for


@pytest.fixture
def watched(project: Path, runtime_base: Path) -> Iterator[Stack]:
    with stack_for(project, runtime_base,
                   extra_env={"LLAMON_PLAYGROUND_WATCH_QUIET": "0.15"}) as s:
        s.start_daemon()
        yield s


def run(stack: Stack, *args: str, code: int = 0) -> str:
    result = cli(stack, *args)
    assert result.returncode == code, (args, result.returncode, result.stdout, result.stderr)
    return result.stdout + result.stderr


def sent(stack: Stack, session: str, text: str, code: int) -> str:
    """A run's id, once it has ended (`send --follow` says `<run_id> <status>` last)."""
    out = cli(stack, "send", session, text, str(stack.project), "--follow")
    assert out.returncode == code, out.stderr
    return out.stderr.strip().splitlines()[-1].split()[0]


def generation(stack: Stack) -> int:
    doc = orjson.loads(run(stack, "host", "status", str(stack.project), "--json"))
    return int(doc["generation"] or 0) if doc["state"] == "ready" else -1


def test_suite_run_follow_exits_0_unchanged_and_5_when_a_status_moved(watched: Stack) -> None:
    project = str(watched.project)
    session = run(watched, "new-session", project).strip()
    stream = sent(watched, session, "stream hello there", 0)
    fail = sent(watched, session, "fail", 1)
    created = orjson.loads(run(watched, "suite", "create", "ci", stream, fail,
                               "--project", project, "--json"))
    assert created["case_count"] == 2

    out = run(watched, "suite", "run", "ci", "--follow", "--project", project)
    lines = out.splitlines()
    assert [line.split()[0] for line in lines[:2]] == ["[1/2]", "[2/2]"]
    assert "completed → completed" in lines[0] and "failed → failed" in lines[1]
    # Each case is named by what it sends, never a bare `run`.
    assert lines[0].startswith("[1/2] stream hello there ") and lines[1].startswith("[2/2] fail ")
    assert "changed 0  status moved 0" in out

    # A score moves (no "hello" any more): still 0, scores never decide.
    agent = watched.project / "app" / "agent.py"
    edit_and_wait(watched, agent, 'hello = "hello" in', 'hello = "hola" in')
    out = run(watched, "suite", "run", "ci", "--follow", "--project", project)
    assert "mentions_hello -1 (pass→fail)" in out and "status moved 0" in out

    # A status moves (the `fail` input now completes): exit 5.
    edit_and_wait(watched, agent, 'elif command == "fail":', 'elif command == "never-fail":')
    report = orjson.loads(run(watched, "suite", "run", "ci", "--follow", "--json",
                              "--project", project, code=5))
    assert report["summary"]["status_moved_cases"] == 1
    assert report["summary"]["statuses_moved"] == [
        {"before": "failed", "after": "completed", "count": 1}]
    out = run(watched, "suite", "report", report["id"], "--project", project, code=5)
    assert "STATUS MOVED" in out and "[2/2] fail " in out
    # Its results as the baselines: the same code moves nothing now.
    run(watched, "suite", "baseline", "ci", report["id"], "--project", project)
    out = run(watched, "suite", "run", "ci", "--follow", "--project", project)
    assert "changed 0  status moved 0" in out


def edit_and_wait(stack: Stack, path: Path, old: str, new: str) -> None:
    gen = generation(stack)
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))
    wait_for(lambda: generation(stack), 30, "the Host restarted for the edit",
             check=lambda g: g > gen)


def test_suite_commands_without_a_daemon_exit_3_and_bad_input_exits_1(stack: Stack,
                                                                      ) -> None:
    result = cli(stack, "suite", "list", "--project", str(stack.project))
    assert result.returncode == 3 and "no daemon serves" in result.stderr
    stack.start_daemon()
    result = cli(stack, "suite", "create", "x", "run_nope", "--project", str(stack.project))
    assert result.returncode == 1 and "unknown_run" in result.stderr
    result = cli(stack, "suite", "run", "nope", "--project", str(stack.project))
    assert result.returncode == 1 and "suite_not_found" in result.stderr
