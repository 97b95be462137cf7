"""`suite run NAME --ci` as a CI job runs it: on a fresh `git clone` holding a suite file, with
no daemon, it starts a private one with a temporary history, writes JUnit XML (read back by
junitparser, a well-kept parser of the schema CI servers read) and exits 0 on unchanged
code, 5 after an edit that changes an answer; nothing is left running, the clone's history
and suite file are untouched. Repetitions: a case whose answer is random is `flaky` (exit
6), a fixed case an edit moved is `changed`. The real daemon, Host and CLI as processes.

docs/suites.md's GitHub Actions and GitLab CI jobs run CI_COMMAND (a unit test holds the
docs to it)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import orjson
import psutil
import pytest
from junitparser import Error, Failure, JUnitXml

from tests.e2e.test_suite_cli import edit_and_wait, run, sent
from tests.support.procs import Stack, short_tmpdir, stack_for

# The command line of docs/suites.md's CI jobs, word for word.
CI_COMMAND = ["llamon-playground", "suite", "run", "smoke", "--ci", "--junit", "junit.xml",
              "--json", "report.json"]
AGENT = Path("app") / "agent.py"
STREAM = "text = rest or DEFAULT_SENTENCE"
LOUDER = "text = (rest or DEFAULT_SENTENCE).upper()"
# A test Host behaviour whose answer is random: `dice` answers 16 random hex digits.
DICE = ('            elif command == "dice":\n'
        '                await self._stream_text(updater, os.urandom(8).hex())\n'
        '                await updater.complete()\n'
        '            elif command == "tokens":')


@pytest.fixture
def watched(project: Path, runtime_base: Path) -> Iterator[Stack]:
    agent = project / AGENT
    agent.write_text(agent.read_text().replace('            elif command == "tokens":', DICE))
    with stack_for(project, runtime_base,
                   extra_env={"LLAMON_PLAYGROUND_WATCH_QUIET": "0.15"}) as s:
        s.start_daemon()
        yield s


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@localhost", *args],
                          cwd=cwd, check=True, capture_output=True, text=True).stdout


def ours(folder: Path) -> list[psutil.Process]:
    """Processes that name `folder` (a daemon or Host serving it)."""
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        try:
            if any(str(folder) in part for part in proc.info["cmdline"] or []):
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found


def ci_job(clone: Path, runtime: Path) -> subprocess.CompletedProcess[str]:
    """CI_COMMAND in the checkout, as a CI runner would (no daemon, nothing configured)."""
    env = {**os.environ, "LLAMON_PLAYGROUND_RUNTIME_DIR": str(runtime)}
    env.pop("LLAMON_PLAYGROUND_HISTORY_DIR", None)
    argv = [str(Path(sys.executable).parent / CI_COMMAND[0]), *CI_COMMAND[1:]]
    return subprocess.run(argv, cwd=clone, env=env, capture_output=True, text=True, timeout=110,
        check=False)


def test_ci_command_on_a_fresh_clone(watched: Stack, tmp_path: Path) -> None:
    project = str(watched.project)
    session = run(watched, "new-session", project).strip()
    cases = [sent(watched, session, "stream hello there", 0), sent(watched, session, "fail", 1),
             sent(watched, session, "say these words back", 0)]
    run(watched, "suite", "create", "smoke", *cases, "--project", project)
    run(watched, "suite", "save", "smoke", "--project", project)
    watched.close()  # no daemon from here on
    (watched.project / ".gitignore").write_text(".llamon/\n__pycache__/\n")
    git(watched.project, "init", "-q")
    git(watched.project, "add", "-A")
    git(watched.project, "commit", "-qm", "a project with a suite file")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(watched.project), str(clone))
    runtime = short_tmpdir("lr")
    try:
        result = ci_job(clone, runtime)
        assert result.returncode == 0, (result.stdout, result.stderr)
        assert "started a private one" in result.stderr
        assert "changed 0  status moved 0" in result.stdout
        xml = JUnitXml.fromfile(str(clone / "junit.xml"))
        suite = next(iter(xml))
        assert (suite.tests, suite.failures, suite.errors, suite.skipped) == (3, 0, 0, 0)
        assert next(c.name for c in suite) == "[1] stream hello there"
        assert orjson.loads((clone / "report.json").read_bytes())["status"] == "completed"
        assert not ours(clone), "the private daemon or its Host is still running"
        assert not (clone / ".llamon").exists()
        assert sorted(git(clone, "status", "--porcelain").splitlines()) == [
            "?? junit.xml", "?? report.json"]

        (clone / AGENT).write_text((clone / AGENT).read_text().replace(STREAM, LOUDER))
        result = ci_job(clone, runtime)
        assert result.returncode == 5, (result.stdout, result.stderr)
        suite = next(iter(JUnitXml.fromfile(str(clone / "junit.xml"))))
        assert (suite.tests, suite.failures, suite.errors) == (3, 1, 0)
        changed = [c for c in suite if c.result]
        assert [c.name for c in changed] == ["[1] stream hello there"]
        failure = changed[0].result[0]
        assert isinstance(failure, Failure) and "completed → completed" in failure.message
        assert "-hello" in failure.text and "+HELLO" in failure.text
        assert "mentions_hello" in changed[0].system_out
        assert not ours(clone) and not (clone / ".llamon").exists()
        assert git(clone, "status", "--porcelain", "--", "playground") == ""
    finally:
        for proc in ours(clone):  # only on failure: this test's own stray processes
            proc.kill()
        shutil.rmtree(runtime, ignore_errors=True)


def test_repetitions_tell_a_flaky_case_from_a_changed_one(watched: Stack,
                                                          tmp_path: Path) -> None:
    project = str(watched.project)
    session = run(watched, "new-session", project).strip()
    cases = [sent(watched, session, "stream hello there", 0), sent(watched, session, "dice", 0),
             sent(watched, session, "say these words back", 0)]
    run(watched, "suite", "create", "rep", *cases, "--project", project)

    result = subprocess.run(
        [sys.executable, "-m", "llamon_playground", "suite", "run", "rep", "--repeat", "3",
         "--follow", "--json", str(tmp_path / "r.json"), "--project", project],
        env=watched.env, capture_output=True, text=True, timeout=110,
        check=False)
    assert result.returncode == 6, (result.stdout, result.stderr)
    report = orjson.loads((tmp_path / "r.json").read_bytes())
    rows = report["cases"]
    assert [r["mark"] for r in rows] == ["same", "flaky", "same"]
    assert [r["repeat"] for r in rows] == [3, 3, 3] and report["repeat"] == 3
    assert all(r["baseline_status_share"] == 1.0 for r in rows)
    assert len(rows[1]["run_ids"]) == 3
    spread = {s["evaluator"]: s for s in rows[0]["score_spread"]}
    assert (spread["word_count"]["min"], spread["word_count"]["median"],
            spread["word_count"]["max"]) == (2, 2, 2)
    assert set(rows[0]["duration_spread"]) == {"min", "median", "max"}
    assert report["summary"]["flaky"] == 1 and report["summary"]["changed"] == 0
    assert "FLAKY" in result.stdout and "flaky 1" in result.stdout

    edit_and_wait(watched, watched.project / AGENT, STREAM, LOUDER)
    junit = tmp_path / "rep.xml"
    result = subprocess.run(
        [sys.executable, "-m", "llamon_playground", "suite", "run", "rep", "--ci", "--repeat",
         "3", "--junit", str(junit), "--json", "--project", project],
        env=watched.env, capture_output=True, text=True, timeout=110,
        check=False)
    assert result.returncode == 5, (result.stdout, result.stderr)
    assert "using the running daemon" in result.stderr
    report = orjson.loads(result.stdout)
    assert [r["mark"] for r in report["cases"]] == ["changed", "flaky", "same"]
    suite = next(iter(JUnitXml.fromfile(str(junit))))
    assert (suite.tests, suite.failures, suite.errors) == (3, 1, 1)
    outcomes = [type(c.result[0]) if c.result else None for c in suite]
    assert outcomes == [Failure, Error, None]


def test_the_docs_ci_jobs_run_the_tested_command_line() -> None:
    docs = (Path(__file__).parents[2] / "docs" / "suites.md").read_text()
    github = docs.split("GitHub Actions (`.github/workflows/suites.yml`):")[1].split("```")[1]
    gitlab = docs.split("GitLab CI (`.gitlab-ci.yml`):")[1].split("```")[1]
    line = " ".join(CI_COMMAND)
    assert f"- run: {line}\n" in github and f"    - {line}\n" in gitlab
