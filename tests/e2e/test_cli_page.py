"""The CLI reaches what the page reaches: sessions, one run's detail and lineage, attaching
to a run's stream, deleting all history, data and file parts, snippets, the composer and
source targets; and its errors are one line naming the next command. Real daemons; exit
codes: 0 ok, 1 error, 2 usage, 3 daemon not running, 4 conflict."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.support.door import cli, running_daemon
from tests.support.procs import REPO, Stack, stack_for

ASK_HINT = 'llamon-playground resume {run} "answer" {project}'


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    yield from running_daemon(tmp_path_factory, "page")


def run(stack: Stack, *args: str, opts: tuple[str, ...] = (), code: int = 0,
        stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """`llamon-playground ARGS PROJECT OPTS`, which must exit `code`, never with a traceback."""
    argv = [sys.executable, "-m", "llamon_playground", *args, str(stack.project), *opts]
    result = subprocess.run(argv, env=stack.env, cwd=REPO, capture_output=True, text=True,
                            timeout=60, input=stdin if stdin is not None else "", check=False)
    assert result.returncode == code, (args, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    return result


def doc(stack: Stack, *args: str, opts: tuple[str, ...] = ()) -> Any:
    return orjson.loads(run(stack, *args, opts=(*opts, "--json")).stdout)


def session_of(stack: Stack, title: str = "page") -> str:
    return run(stack, "new-session", opts=("--title", title)).stdout.strip()


def followed(stack: Stack, session: str, text: str, *opts: str) -> str:
    out = run(stack, "send", session, text, opts=("--follow", "--json", *opts)).stdout
    return str(orjson.loads(out.splitlines()[0])["run_id"])


def asked_and_answered(stack: Stack, name: str) -> tuple[str, str]:
    session = session_of(stack)
    asked = followed(stack, session, "ask")
    out = run(stack, "resume", asked, name, opts=("--follow", "--json")).stdout
    return asked, str(orjson.loads(out.splitlines()[0])["run_id"])


def test_sessions_lists_and_renames(page: Stack) -> None:
    session = session_of(page, "before")
    followed(page, session, "stream one")
    line = next(ln for ln in run(page, "sessions").stdout.splitlines() if session in ln)
    assert line.endswith("  1 run  before"), line
    renamed = run(page, "sessions", "rename", session, "after the rename")
    assert renamed.stdout.strip() == f"{session} after the rename"
    listed = doc(page, "sessions")["sessions"]
    assert [s["title"] for s in listed if s["id"] == session] == ["after the rename"]
    missing = run(page, "sessions", "rename", "ses_nope", "x", code=1)
    assert "session_not_found" in missing.stderr
    no_title = cli(page, "sessions", "rename", session)
    assert no_title.returncode == 2
    assert no_title.stderr.startswith("llamon-playground: usage: sessions rename")


def test_runs_show_prints_the_detail_and_the_lineage(page: Stack) -> None:
    asked, answered = asked_and_answered(page, "Ada")
    shown = run(page, "runs", "show", answered).stdout
    assert f"run       {answered}  completed" in shown
    assert "input     Ada" in shown and "output    Hello, Ada!" in shown
    lines = shown.splitlines()
    chain = next(n for n, line in enumerate(lines) if line.startswith("resumes"))
    # The chain, first turn first; this run marked.
    assert lines[chain].startswith(f"resumes     {asked}  input_required"), shown
    assert lines[chain + 1].strip().startswith(f"* {answered}  completed"), shown
    both = doc(page, "runs", "show", answered)
    assert both["run"]["id"] == answered and both["run"]["parent_run_id"] == asked
    assert [r["id"] for r in both["lineage"]["resumes"]] == [asked, answered]
    assert "run_not_found" in run(page, "runs", "show", "run_nope", code=1).stderr
    assert cli(page, "runs", "show").returncode == 2


def test_runs_show_cuts_a_long_text_unless_full(page: Stack) -> None:
    long_run = followed(page, session_of(page), "tokens 1500")
    cut = run(page, "runs", "show", long_run).stdout
    assert "more characters; --full prints it whole" in cut and "t1499" not in cut
    whole = run(page, "runs", "show", long_run, opts=("--full",)).stdout
    assert "t1499" in whole and "more characters" not in whole


def test_runs_show_full_reads_a_text_the_daemon_cut(page: Stack) -> None:
    # 20,000 tokens: a text past the detail answer's excerpt, which `GET /runs/{id}`
    # answers cut with a `content_url`; --full reads the part route for the rest.
    long_run = followed(page, session_of(page), "tokens 20000")
    detail = doc(page, "runs", "show", long_run)["run"]["output"][0]
    assert detail["truncated"] and detail["content_url"], detail
    cut = run(page, "runs", "show", long_run).stdout
    assert f"the whole text is {detail['size']:,} bytes; --full prints it whole" in cut
    whole = run(page, "runs", "show", long_run, opts=("--full",)).stdout
    assert "t19999" in whole and "--full prints it whole" not in whole
    shown = next(ln for ln in whole.splitlines() if ln.startswith("output"))[10:]
    assert len(shown.encode()) == detail["size"]


def test_follow_attaches_like_send_follow(page: Stack) -> None:
    session = session_of(page)
    done = followed(page, session, "stream follow me")
    again = run(page, "follow", done)
    assert again.stdout == "follow me\n" and again.stderr.strip().endswith(f"{done} completed")
    events = [orjson.loads(ln) for ln in run(page, "follow", done, opts=("--json",)).stdout
              .splitlines()]
    last = events[-1]
    assert last["kind"] == "run.status" and last["status"] == "completed"
    # After the last event's cursor: nothing more to print, and the run's own status.
    after = run(page, "follow", done, opts=("--after", str(last["seq"])))
    assert after.stdout == "" and after.stderr.strip().endswith("completed")
    failed = followed_failing(page, session)
    result = run(page, "follow", failed, code=1)
    assert "failed (host_error)" in result.stderr
    assert "run_not_found" in run(page, "follow", "run_nope", code=1).stderr


def followed_failing(stack: Stack, session: str) -> str:
    out = run(stack, "send", session, "fail", opts=("--follow", "--json"), code=1).stdout
    return str(orjson.loads(out.splitlines()[0])["run_id"])


def test_a_run_that_asks_says_the_resume_command(page: Stack) -> None:
    result = run(page, "send", session_of(page), "ask", opts=("--follow",))
    run_id = result.stderr.splitlines()[0].strip()
    assert result.stdout.strip() == "What is your name?"
    assert ASK_HINT.format(run=run_id, project=page.project) in result.stderr
    followed_again = run(page, "follow", run_id)
    assert ASK_HINT.format(run=run_id, project=page.project) in followed_again.stderr


def test_send_data_file_metadata_and_changed_files(page: Stack, tmp_path: Path) -> None:
    attachment = tmp_path / "notes.txt"
    attachment.write_bytes(b"line one\n\x00binary")
    run_id = followed(page, session_of(page), "", "--data", '{"schema": "x.v1", "n": 1}',
                      "--file", str(attachment), "--metadata", '{"userId": "u-1"}',
                      "--changed-file", "app/agent.py", "--changed-file", "app/host.py")
    stored = doc(page, "runs", "show", run_id)["run"]["input"]
    kinds = [p["kind"] for p in stored["parts"]]
    assert kinds == ["data", "file"], stored
    assert stored["parts"][0]["data"] == {"schema": "x.v1", "n": 1}
    assert stored["parts"][1]["name"] == "notes.txt" and stored["parts"][1]["mime"] == "text/plain"
    assert stored["parts"][1]["size"] == attachment.stat().st_size
    assert stored["metadata"] == {"userId": "u-1"}
    assert stored["changed_files"] == ["app/agent.py", "app/host.py"]
    shown = run(page, "runs", "show", run_id).stdout
    assert 'data: {"schema":"x.v1","n":1}' in shown and "file: notes.txt (text/plain" in shown


@pytest.mark.parametrize(("opts", "says"), [
    (("--data", "{nope"), "--data is not JSON"),
    (("--data", "[1, 2]"), "--data must be a JSON object"),
    (("--metadata", '"x"'), "--metadata must be a JSON object"),
    (("--file", "/no/such/file.bin"), "--file /no/such/file.bin: cannot read it"),
])
def test_send_refuses_a_bad_part_in_one_line(page: Stack, opts: tuple[str, ...],
                                             says: str) -> None:
    result = run(page, "send", "ses_whatever", "hi", opts=opts, code=2)
    assert result.stderr.strip() == result.stderr.strip().splitlines()[0]  # one line
    assert says in result.stderr


def test_snippet_prints_the_pages_copy_and_reproduces_a_resume(page: Stack,
                                                              tmp_path: Path) -> None:
    _, answered = asked_and_answered(page, "Lovelace")
    script = tmp_path / "again.py"
    script.write_text(run(page, "snippet", answered, opts=("--python",)).stdout)
    again = subprocess.run([sys.executable, "-I", "-S", str(script)], capture_output=True,
                           text=True, timeout=30, check=False)
    assert again.returncode == 0, again.stderr
    texts = [p.get("text", "") for ln in again.stdout.splitlines()
             for f in [orjson.loads(ln)] if "artifactUpdate" in f.get("result", {})
             for p in f["result"]["artifactUpdate"]["artifact"]["parts"]]
    assert "".join(texts) == "Hello, Lovelace!"
    curl = run(page, "snippet", answered, opts=("--curl",)).stdout
    assert curl.startswith("LLAMON_HOST_URL=") and "Lovelace" in curl
    both = doc(page, "snippet", answered, opts=("--curl",))
    assert both["messages"] == 2 and both["curl"].startswith("LLAMON_HOST_URL=")
    assert run(page, "snippet", answered, code=2).returncode == 2  # --curl or --python


def test_composer_schema_and_targets_of_an_agent(page: Stack) -> None:
    schema = doc(page, "composer-schema")
    assert schema["mode"] == "text" and schema["tabs"] == []
    assert run(page, "composer-schema").stdout.startswith("kind: ")
    argv = [sys.executable, "-m", "llamon_playground", "targets", "echo", "--project",
            str(page.project)]
    result = subprocess.run(argv, env=page.env, cwd=REPO, capture_output=True, text=True,
                            timeout=60, check=False)
    assert result.returncode == 1 and "node_not_found" in result.stderr


def test_composer_schema_and_targets_of_a_flow(tmp_path: Path, runtime_base: Path) -> None:
    project = Path(shutil.copytree(REPO / "examples" / "flow_project", tmp_path / "flow",
                                   ignore=shutil.ignore_patterns(".llamon", "__pycache__")))
    with stack_for(project, runtime_base) as stack:
        stack.start_daemon()
        schema = doc(stack, "composer-schema")
        starts = [t["node_id"] for t in schema["tabs"]]
        assert schema["mode"] == "data" and starts
        assert f"node {starts[0]}" in run(stack, "composer-schema").stdout

        def targets(*nodes: str, code: int = 0) -> subprocess.CompletedProcess[str]:
            argv = [sys.executable, "-m", "llamon_playground", "targets", *nodes,
                    "--project", str(project)]
            done = subprocess.run(argv, env=stack.env, cwd=REPO, capture_output=True,
                                  text=True, timeout=60, check=False)
            assert done.returncode == code, done.stderr
            return done
        lines = targets().stdout.splitlines()  # no node named: the start nodes
        assert [ln.split()[0] for ln in lines] == list(dict.fromkeys(starts))
        assert all(":" in ln.split()[-1] and ln.split()[-1].split(":")[0].endswith(".py")
                   for ln in lines), lines
        missing = targets(starts[0], "no_such_node", code=1)
        assert missing.stdout.startswith(starts[0]) and "node_not_found" in missing.stderr


def test_delete_all_asks_first(daemon: Stack) -> None:
    session = session_of(daemon)
    followed(daemon, session, "stream keep me")
    declined = run(daemon, "delete", "--all", stdin="n\n", code=1)
    assert "delete all history of" in declined.stderr and "nothing deleted" in declined.stderr
    assert doc(daemon, "sessions")["sessions"]
    done = run(daemon, "delete", "--all", stdin="yes\n")
    assert done.stdout.startswith("deleted 1 sessions, 1 runs")
    assert doc(daemon, "sessions")["sessions"] == []
    session_of(daemon)
    gone = doc(daemon, "delete", "--all", opts=("--yes",))
    assert gone["deleted"]["sessions"] == 1
    assert cli(daemon, "delete").returncode == 2  # neither a session nor --all


def test_a_conflict_names_the_active_run_its_session_and_the_next_step(daemon: Stack) -> None:
    session = session_of(daemon)
    busy = doc(daemon, "send", session, "slow")["run_id"]
    try:
        refused = run(daemon, "send", session, "stream no", code=4)
        [line] = refused.stderr.strip().splitlines()
        assert f"run {busy} in session {session} is active" in line
        assert f"`llamon-playground follow {busy} {daemon.project}`" in line
        assert f"`llamon-playground cancel {busy} {daemon.project}`" in line
        assert "active_run_conflict" in run(daemon, "delete", "--all", opts=("--yes",),
                                            code=4).stderr
    finally:
        run(daemon, "cancel", busy, opts=("--wait",))


def test_errors_are_one_line_with_the_next_command(stack: Stack, tmp_path: Path) -> None:
    no_daemon = run(stack, "sessions", code=3)
    assert f"start one with `llamon-playground up {stack.project}`" in no_daemon.stderr
    missing = run(stack, "import", str(tmp_path / "nope.json"), code=2)
    assert missing.stderr.strip() == (f"llamon-playground: no bundle file {tmp_path / 'nope.json'}"
                                      " (not there); `llamon-playground export -o FILE` "
                                      "writes one")


def test_suite_report_takes_a_suite_name(page: Stack) -> None:
    run_id = followed(page, session_of(page), "stream suite words")

    def suite(*args: str, code: int = 0) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-m", "llamon_playground", "suite", *args,
                "--project", str(page.project)]
        done = subprocess.run(argv, env=page.env, cwd=REPO, capture_output=True, text=True,
                              timeout=60, check=False)
        assert done.returncode == code, done.stderr
        return done
    suite("create", "by-name", run_id)
    never = suite("report", "by-name", code=1)
    assert ("has not run yet; run it with `llamon-playground suite run by-name --project "
            f"{page.project}`") in never.stderr
    suite_run = suite("run", "by-name", "--follow").stdout
    by_name = suite("report", "by-name").stdout
    assert by_name == suite_run
    latest = orjson.loads(suite("report", "by-name", "--json").stdout)
    assert suite("report", latest["id"]).stdout == by_name
    unknown = suite("report", "no-such-suite", code=1)
    assert ("no suite named 'no-such-suite' and no suite run no-such-suite; "
            f"`llamon-playground suite list --project {page.project}` names the suites"
            ) in unknown.stderr


def test_resume_takes_the_same_parts_as_send(page: Stack) -> None:
    asked = followed(page, session_of(page), "ask")
    result = run(page, "resume", asked, "", opts=("--data", '{"name": "Ada"}', "--follow"))
    assert result.stdout == "Hello, stranger!\n"  # the echo Host answers a text, none came
    answered = result.stderr.splitlines()[0].strip()
    stored = doc(page, "runs", "show", answered)["run"]["input"]
    assert stored["parts"] == [{"kind": "data", "data": {"name": "Ada"}}]
