"""Copy curl / Copy Python, executed for real against the example Hosts after real runs."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.api import Api
from tests.support.procs import REPO, stack_for

CURL = shutil.which("curl")
needs_curl = pytest.mark.skipif(CURL is None, reason="curl is not installed")
SNIPPET_TIMEOUT = 30


def frames(stdout: str) -> list[dict[str, Any]]:
    """JSON-RPC frames from curl's raw SSE (`data: ...`) or the Python snippet's JSON lines."""
    found = []
    for line in stdout.splitlines():
        text = line.removeprefix("data:").strip()
        if text.startswith("{"):
            found.append(json.loads(text))
    return found


def streamed_text(found: list[dict[str, Any]]) -> str:
    assert found and not any("error" in f for f in found), found
    return "".join(part.get("text", "")
                   for f in found if "artifactUpdate" in f["result"]
                   for part in f["result"]["artifactUpdate"]["artifact"]["parts"])


def run_curl(snippet: str, env: dict[str, str] | None = None) -> list[dict[str, Any]]:
    done = subprocess.run(["bash", "-c", snippet], capture_output=True, text=True,
                          timeout=SNIPPET_TIMEOUT, env={**os.environ, **(env or {})}, check=False)
    assert done.returncode == 0, done.stderr
    return frames(done.stdout)


def run_python(snippet: str, tmp_path: Path, env: dict[str, str] | None = None
               ) -> list[dict[str, Any]]:
    script = tmp_path / "snippet.py"
    script.write_text(snippet)
    # -I -S: no site-packages at all, so the snippet can only use the standard library.
    done = subprocess.run([sys.executable, "-I", "-S", str(script)], capture_output=True,
                          text=True, timeout=SNIPPET_TIMEOUT,
                          env={**os.environ, **(env or {})}, check=False)
    assert done.returncode == 0, done.stderr
    return frames(done.stdout)


def run_failing(snippet: str, tmp_path: Path, python: bool) -> subprocess.CompletedProcess[str]:
    if python:
        script = tmp_path / "failing.py"
        script.write_text(snippet)
        argv = [sys.executable, "-I", "-S", str(script)]
    else:
        argv = ["bash", "-c", snippet]
    return subprocess.run(argv, capture_output=True, text=True, timeout=SNIPPET_TIMEOUT, check=False)


BLOB = b"hello blob \x00\xff\n"
SECRET = "sk-abcdefghijklmnopqrstuvwxyz123456"


@needs_curl
async def test_snippets_reproduce_a_run_against_the_echo_host(direct: Api,
                                                              tmp_path: Path) -> None:
    session = await direct.session()
    parts = [
        {"kind": "text", "text": "stream snippet words here"},
        {"kind": "data", "data": {"schema": "approval.v1", "requestId": "R-1",
                                  "note": "it's \"quoted\" $HOME `x` 승인 \\ end"}},
        {"kind": "file", "name": "a.bin", "mime": "application/octet-stream",
         "bytes_base64": base64.b64encode(BLOB).decode()},
        {"kind": "file", "uri": "https://example.invalid/spec.pdf", "name": "spec.pdf",
         "mime": "application/pdf"},
    ]
    metadata = {"userId": "user-1", "apiKey": SECRET}
    run_id = (await direct.ok("POST", f"sessions/{session}/runs",
                              {"parts": parts, "metadata": metadata}, 202))["run_id"]
    run = await direct.wait_status(run_id)
    assert run["status"] == "completed", run

    snippets = await direct.ok("GET", f"runs/{run_id}/snippets")
    host = await direct.ok("GET", "host")
    assert snippets["host_ready"] is True and snippets["host_url"] == host["url"] + "/"
    for name in ("curl", "python"):
        text = snippets[name]
        assert "llamon.playground" not in text and SECRET not in text
        assert "user-1" in text and run["context_id"] in text
        assert base64.b64encode(BLOB).decode() in text
        assert "https://example.invalid/spec.pdf" in text
        assert "taskId" not in text  # not a resume: the Host starts a new task
        assert "SendStreamingMessage" in text and "A2A-Version" in text

    assert run["a2a_version"] == snippets["a2a_version"] == "1.0"
    for found in (run_curl(snippets["curl"]), run_python(snippets["python"], tmp_path)):
        assert streamed_text(found) == "snippet words here"
        assert found[0]["result"]["task"]["contextId"] == run["context_id"]
        sent = found[0]["result"]["task"]["history"][0]
        assert [sorted(p) for p in sent["parts"]] == [
            ["text"], ["data"], ["filename", "mediaType", "raw"],
            ["filename", "mediaType", "url"]]
        assert base64.b64decode(sent["parts"][2]["raw"]) == BLOB
        assert sent["parts"][1]["data"]["note"] == parts[1]["data"]["note"]  # type: ignore
    for name in ("curl", "python"):
        broken = snippets[name].replace("SendStreamingMessage", "NoSuchMethod")
        done = run_failing(broken, tmp_path, python=name == "python")
        assert done.returncode == 1 and "-32601" in done.stdout, (name, done.stdout)


@needs_curl
async def test_resume_snippet_continues_the_task_and_placeholder_url_works(
        project: Path, runtime_base: Path, tmp_path: Path) -> None:
    # A file that does not compile: a run naming it in changed_files fails in `validate`,
    # before it touches the Host. Written before the daemon starts, so no watcher sees it.
    (project / "app" / "broken.py").write_text("def broken(:\n")
    broken = ["app/broken.py"]
    with stack_for(project, runtime_base) as stack:
        stack.start_daemon()
        api = Api.for_socket(str(stack.settings.socket_path))
        try:
            session = await api.session()
            early = await api.wait_status(await api.start_run(
                session, "stream placeholder works", changed_files=broken))
            assert early["status"] == "failed", early  # in validate, before any send
            offline = await api.ok("GET", f"runs/{early['id']}/snippets")
            assert offline["host_ready"] is False and offline["host_url"] is None
            assert "${LLAMON_HOST_PORT:?" in offline["curl"]
            assert 'os.environ["LLAMON_HOST_PORT"]' in offline["python"]

            asked = await api.wait_status(await api.start_run(session, "ask"))
            assert asked["status"] == "input_required" and asked["task_id"]
            resume = await api.ok("POST", f"runs/{asked['id']}/resume",
                                  {"parts": [{"kind": "text", "text": "Ada"}],
                                   "changed_files": broken}, 202)
            failed = await api.wait_status(resume["run_id"])
            assert failed["status"] == "failed" and failed["parent_run_id"] == asked["id"]

            # Even while the task still waits on the Host, the snippet does not use it: it
            # sends the chain to a fresh task, so it reproduces the same later too.
            snippets = await api.ok("GET", f"runs/{failed['id']}/snippets")
            assert snippets["messages"] == 2
            assert asked["task_id"] not in snippets["curl"] + snippets["python"]
            found = run_curl(snippets["curl"])
            assert streamed_text(found) == "Hello, Ada!"
            assert asked["task_id"] not in {f["result"]["statusUpdate"]["taskId"] for f in found
                                            if "statusUpdate" in f["result"]}

            # The placeholder snippets run as is once the port is in the environment.
            port = {"LLAMON_HOST_PORT": (await api.ok("GET", "host"))["url"].rsplit(":", 1)[1]}
            assert streamed_text(run_python(offline["python"], tmp_path, port)
                                 ) == "placeholder works"
            assert streamed_text(run_curl(offline["curl"], port)) == "placeholder works"
            # Without the port, the shell stops before sending anywhere.
            env = {k: v for k, v in os.environ.items() if k != "LLAMON_HOST_PORT"}
            done = subprocess.run(["bash", "-c", offline["curl"]], capture_output=True,
                                  text=True, timeout=SNIPPET_TIMEOUT, env=env, check=False)
            assert done.returncode != 0 and "set LLAMON_HOST_PORT" in done.stderr

            code, doc = await api.call("GET", "runs/run_missing/snippets")
            assert code == 404 and doc["detail"]["error"] == "run_not_found"
        finally:
            await api.close()


def task_ids(found: list[dict[str, Any]]) -> set[str]:
    return {f["result"]["statusUpdate"]["taskId"] for f in found if "statusUpdate" in f["result"]}


@needs_curl
async def test_a_resumed_runs_snippets_send_its_chain_to_a_fresh_task(direct: Api,
                                                                      tmp_path: Path) -> None:
    """Copied right after the resume completed, the snippets still reproduce it: its own
    task has ended, so they send the first message and then the answer to a new task."""
    session = await direct.session()
    asked = await direct.wait_status(await direct.start_run(session, "ask"))
    assert asked["status"] == "input_required"
    answer = {"parts": [{"kind": "text", "text": "Grace"}]}
    resumed = await direct.wait_status(
        (await direct.ok("POST", f"runs/{asked['id']}/resume", answer, 202))["run_id"])
    assert resumed["status"] == "completed", resumed
    final = "".join(p.get("text", "") for p in resumed["output"] if p["kind"] == "text")
    assert final == "Hello, Grace!"

    snippets = await direct.ok("GET", f"runs/{resumed['id']}/snippets")
    assert snippets["messages"] == 2 and snippets["run_id"] == resumed["id"]
    for name in ("curl", "python"):
        assert resumed["task_id"] not in snippets[name]  # the ended task: never sent again
        assert '"ask"' in snippets[name].replace("'", '"') and "Grace" in snippets[name]
    for found in (run_curl(snippets["curl"]), run_python(snippets["python"], tmp_path),
                  run_curl(snippets["curl"])):  # and again: each run makes a task of its own
        assert streamed_text(found) == final
        [fresh] = task_ids(found)
        assert fresh != resumed["task_id"]

    # The first run's own snippets are unchanged: one message, no task id.
    first = await direct.ok("GET", f"runs/{asked['id']}/snippets")
    assert first["messages"] == 1 and "taskId" not in first["curl"] + first["python"]


@needs_curl
async def test_a_chain_snippet_says_why_when_the_host_stops_asking(direct: Api,
                                                                   tmp_path: Path) -> None:
    """A step that no longer parks the task: the snippet stops there, saying so, exit 1."""
    session = await direct.session()
    asked = await direct.wait_status(await direct.start_run(session, "ask"))
    resumed = await direct.wait_status((await direct.ok(
        "POST", f"runs/{asked['id']}/resume",
        {"parts": [{"kind": "text", "text": "Lin"}]}, 202))["run_id"])
    snippets = await direct.ok("GET", f"runs/{resumed['id']}/snippets")
    # The first message no longer asks: the Host completes the task at once.
    python = snippets["python"].replace("'ask'", "'stream no question'")
    done = run_failing(python, tmp_path, python=True)
    assert done.returncode == 1 and "did not ask for input" in done.stderr, done.stderr
    curl = snippets["curl"].replace('"text": "ask"', '"text": "stream no question"')
    done = run_failing(curl, tmp_path, python=False)
    assert done.returncode != 0 and "no question" in done.stdout


@needs_curl
async def test_snippets_send_data_parts_the_flow_host_answers(tmp_path: Path,
                                                              runtime_base: Path) -> None:
    project = Path(shutil.copytree(REPO / "examples" / "flow_project", tmp_path / "flow",
                                   ignore=shutil.ignore_patterns(".llamon", "__pycache__")))
    with stack_for(project, runtime_base) as stack:
        stack.start_daemon()
        api = Api.for_socket(str(stack.settings.socket_path))
        try:
            data = {"schema": "approval.v1", "requestId": "R-9", "amount": 250,
                    "requester": {"name": "Ada"}, "tags": ["q3"]}
            run_id = (await api.ok("POST", f"sessions/{await api.session()}/runs",
                                   {"parts": [{"kind": "data", "data": data}]}, 202))["run_id"]
            assert (await api.wait_status(run_id))["status"] == "completed"
            snippets = await api.ok("GET", f"runs/{run_id}/snippets")
            for found in (run_curl(snippets["curl"]), run_python(snippets["python"], tmp_path)):
                assert streamed_text(found) == "approve -> notify: approved"
                [result] = [p["data"] for f in found if "artifactUpdate" in f["result"]
                            for p in f["result"]["artifactUpdate"]["artifact"]["parts"]
                            if "data" in p]
                assert result["requestId"] == "R-9" and result["tags"] == ["q3"]
        finally:
            await api.close()


@needs_curl
async def test_snippets_speak_the_runs_own_version_and_exit_1_on_a_json_rpc_error(
        project: Path, runtime_base: Path, tmp_path: Path) -> None:
    # A Host whose card offers only A2A 0.3: the run speaks 0.3, and so do its snippets.
    with stack_for(project, runtime_base, extra_env={"LLAMON_A2A_VERSIONS": "0.3"}) as stack:
        stack.start_daemon()
        api = Api.for_socket(str(stack.settings.socket_path))
        try:
            run = await api.wait_status(await api.start_run(await api.session(),
                                                            "stream old dialect"))
            assert run["status"] == "completed" and run["a2a_version"] == "0.3", run
            snippets = await api.ok("GET", f"runs/{run['id']}/snippets")
            assert snippets["a2a_version"] == "0.3"
            for name in ("curl", "python"):
                assert "message/stream" in snippets[name], snippets[name]
                assert "SendStreamingMessage" not in snippets[name]
                assert "A2A-Version" not in snippets[name]
            for found in (run_curl(snippets["curl"]),
                          run_python(snippets["python"], tmp_path)):
                assert not any("error" in f for f in found), found
                text = "".join(p.get("text", "") for f in found
                               if f["result"].get("kind") == "artifact-update"
                               for p in f["result"]["artifact"]["parts"])
                assert text == "old dialect"
            # A resumed run's chain, in 0.3 too: the 0.3 task and status shapes.
            asked = await api.wait_status(await api.start_run(await api.session(), "ask"))
            resumed = await api.wait_status((await api.ok(
                "POST", f"runs/{asked['id']}/resume",
                {"parts": [{"kind": "text", "text": "Old"}]}, 202))["run_id"])
            assert resumed["status"] == "completed", resumed
            chain = await api.ok("GET", f"runs/{resumed['id']}/snippets")
            assert chain["messages"] == 2 and chain["a2a_version"] == "0.3"
            for found in (run_curl(chain["curl"]), run_python(chain["python"], tmp_path)):
                assert "".join(p.get("text", "") for f in found
                               if f["result"].get("kind") == "artifact-update"
                               for p in f["result"]["artifact"]["parts"]) == "Hello, Old!"
            # A method the Host does not know: a JSON-RPC error, and a non-zero exit.
            for name in ("curl", "python"):
                broken = snippets[name].replace("message/stream", "message/nope")
                done = run_failing(broken, tmp_path, python=name == "python")
                assert done.returncode == 1, (name, done.stdout, done.stderr)
                assert "-32601" in done.stdout, done.stdout
        finally:
            await api.close()

