"""Suites as files in the project: `suite save` writes a reviewable file, a daemon reads it
back as the same suite, "make this the baseline" rewrites it, and a broken file is named
with its line while everything else goes on. The real daemon and example Host; the CLI as
a process."""

from __future__ import annotations

import hashlib
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from tests.e2e.test_suite_cli import edit_and_wait, run, sent
from tests.support.door import cli
from tests.support.procs import Stack, short_tmpdir, stack_for

SUITE_FILE = Path("playground/suites/smoke.json")


@pytest.fixture
def watched(project: Path, runtime_base: Path) -> Iterator[Stack]:
    with stack_for(project, runtime_base,
                   extra_env={"LLAMON_PLAYGROUND_WATCH_QUIET": "0.15"}) as s:
        s.start_daemon()
        yield s


def saved_suite(stack: Stack) -> bytes:
    """A suite of two runs (one with a multi-line answer), saved to its default file."""
    project = str(stack.project)
    session = run(stack, "new-session", project).strip()
    stream = sent(stack, session, "stream hello there", 0)
    lines = sent(stack, session, "first line\nsecond line", 0)
    run(stack, "suite", "create", "smoke", stream, lines, "--project", project)
    out = orjson.loads(run(stack, "suite", "save", "smoke", "--project", project, "--json"))
    assert out["path"] == SUITE_FILE.as_posix() and out["files"] == 0
    return (stack.project / SUITE_FILE).read_bytes()


def suite_view(stack: Stack, name: str) -> dict[str, object]:
    """What a suite is, apart from its ids and where its baselines came from."""
    listed = orjson.loads(run(stack, "suite", "list", "--project", str(stack.project),
                              "--json"))
    suite = next(s for s in listed["suites"] if s["name"] == name)
    return {"name": suite["name"], "case_count": suite["case_count"],
            "file_path": suite["file_path"], "repeat": suite["repeat"]}


def test_save_writes_a_reviewable_file_that_loads_as_the_same_suite(
        watched: Stack, runtime_base: Path, tmp_path: Path) -> None:
    data = saved_suite(watched)
    text = data.decode()
    doc = orjson.loads(data)
    # Stable and reviewable: sorted keys, one case a block, a multi-line text as its lines,
    # baselines as the compared fields only (no run ids, timestamps or durations).
    assert list(doc) == sorted(doc) and doc["name"] == "smoke" and len(doc["cases"]) == 2
    assert doc["cases"][1]["turns"][0]["parts"][0]["text"] == ["first line", "second line"]
    assert set(doc["cases"][0]["baseline"]) == {"output", "reason", "scores", "status"}
    for pattern in (r"run_[0-9a-f]{6}", "created_at", "duration", r"ses_[0-9a-f]{6}",
                    r"20\d\d-\d\d-\d\dT"):
        assert not re.search(pattern, text), pattern
    # A second save changes no byte.
    run(watched, "suite", "save", "smoke", "--project", str(watched.project))
    assert (watched.project / SUITE_FILE).read_bytes() == data

    # Another checkout, another daemon: the file is the same suite, and saving it from
    # there gives the same bytes.
    other = tmp_path / "other"
    shutil.copytree(watched.project, other, ignore=shutil.ignore_patterns(".llamon"))
    base = short_tmpdir("lq")
    try:
        with stack_for(other, base) as second:
            second.start_daemon()
            assert suite_view(second, "smoke") == {**suite_view(watched, "smoke")}
            run(second, "suite", "save", "smoke", "--project", str(other))
            assert (other / SUITE_FILE).read_bytes() == data
            out = run(second, "suite", "run", "smoke", "--follow", "--project", str(other))
            assert "changed 0  status moved 0" in out
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_making_a_run_the_baseline_rewrites_the_file(watched: Stack) -> None:
    before = saved_suite(watched)
    project = str(watched.project)
    edit_and_wait(watched, watched.project / "app" / "agent.py",
                  "text = rest or DEFAULT_SENTENCE", "text = (rest or DEFAULT_SENTENCE).upper()")
    report = orjson.loads(run(watched, "suite", "run", "smoke", "--follow", "--json",
                              "--project", project))
    assert report["summary"]["changed"] == 1
    assert (watched.project / SUITE_FILE).read_bytes() == before  # a run alone writes nothing
    run(watched, "suite", "baseline", "smoke", report["id"], "--project", project)
    after = (watched.project / SUITE_FILE).read_bytes()
    assert after != before and b"HELLO THERE" in after and b"HELLO THERE" not in before
    # Only the changed case's baseline moved: the other block is byte for byte the same.
    assert orjson.loads(after)["cases"][1] == orjson.loads(before)["cases"][1]
    out = run(watched, "suite", "run", "smoke", "--follow", "--project", project)
    assert "changed 0  status moved 0" in out


def test_a_broken_file_is_named_with_its_line_and_nothing_else_is_affected(
        watched: Stack) -> None:
    saved_suite(watched)
    project = str(watched.project)
    folder = watched.project / "playground" / "suites"
    (folder / "broken.json").write_text('{\n  "cases": [\n    {"kind": "run",,}\n  ]\n}\n')
    missing = "0" * 64
    doc = orjson.loads((folder / "smoke.json").read_bytes())
    doc["name"] = "with-file"
    doc["cases"][1]["turns"][0]["parts"].append(
        {"kind": "file", "sha256": missing, "name": "a.txt", "mime_type": "text/plain"})
    (folder / "with-file.json").write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2))
    case_line = (folder / "with-file.json").read_text().splitlines().index(
        "    {", (folder / "with-file.json").read_text().splitlines().index("    {") + 1) + 1

    listed = orjson.loads(run(watched, "suite", "list", "--project", project, "--json"))
    assert [s["name"] for s in listed["suites"]] == ["smoke"]
    problems = {p["path"]: p for p in listed["file_errors"]}
    assert problems["playground/suites/broken.json"]["line"] == 3
    assert "not JSON" in problems["playground/suites/broken.json"]["message"]
    assert problems["playground/suites/with-file.json"]["line"] == case_line
    assert missing in problems["playground/suites/with-file.json"]["message"]
    out = run(watched, "suite", "list", "--project", project)
    assert "playground/suites/broken.json:3: not JSON" in out
    # Asking for the broken suite by name says which files could not be read.
    result = run(watched, "suite", "run", "with-file", "--follow", "--project", project, code=1)
    assert "with-file.json:" in result and "suite_not_found" in result
    # The good suite still runs; the blob put in place makes the other one readable.
    out = run(watched, "suite", "run", "smoke", "--follow", "--project", project)
    assert "changed 0  status moved 0" in out
    blob = b"file input\n"
    sha = hashlib.sha256(blob).hexdigest()
    fixed = (folder / "with-file.json").read_text().replace(missing, sha)
    (folder / "with-file.json").write_text(fixed)
    (folder / "files").mkdir(exist_ok=True)
    (folder / "files" / sha).write_bytes(blob)
    listed = orjson.loads(run(watched, "suite", "list", "--project", project, "--json"))
    assert sorted(s["name"] for s in listed["suites"]) == ["smoke", "with-file"]
    assert [p["path"] for p in listed["file_errors"]] == ["playground/suites/broken.json"]


def test_a_file_input_is_kept_beside_by_hash_and_runs_from_another_checkout(
        watched: Stack, tmp_path: Path) -> None:
    project = str(watched.project)
    blob = b"pinned bytes\n"
    sha = hashlib.sha256(blob).hexdigest()
    attached = tmp_path / "pin.txt"
    attached.write_bytes(blob)
    session = run(watched, "new-session", project).strip()
    out = cli(watched, "send", session, "stream hello file", project, "--file", str(attached),
              "--follow")
    assert out.returncode == 0, out.stderr
    run_id = out.stderr.strip().splitlines()[-1].split()[0]
    run(watched, "suite", "create", "pinned", run_id, "--project", project)
    saved = orjson.loads(run(watched, "suite", "save", "pinned", "--to",
                             "playground/suites/team/pinned.json", "--project", project,
                             "--json"))
    assert (saved["path"], saved["files"]) == ("playground/suites/team/pinned.json", 1)
    folder = watched.project / "playground" / "suites"
    assert (folder / "files" / sha).read_bytes() == blob
    assert sha in (folder / "team" / "pinned.json").read_text()

    other = tmp_path / "other"
    shutil.copytree(watched.project, other, ignore=shutil.ignore_patterns(".llamon"))
    base = short_tmpdir("lq")
    try:
        with stack_for(other, base) as second:
            second.start_daemon()
            report = orjson.loads(run(second, "suite", "run", "pinned", "--follow", "--json",
                                      "--project", str(other)))
            assert report["status"] == "completed" and report["summary"]["changed"] == 0
            # The blob came from playground/suites/files/ into this checkout's history.
            assert (other / ".llamon" / "playground" / "files" / sha).read_bytes() == blob
    finally:
        shutil.rmtree(base, ignore_errors=True)
