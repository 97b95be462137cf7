"""Logs a machine can keep: daemon.log, front.log and host.log rotate at their configured
sizes, refused requests are one line per reason per minute with a count, no log holds a
token (the front's, or the capture token however the Host's writes split it), and a
`.llamon` that is a symbolic link is refused, never followed."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from pathlib import Path

import aiohttp

from llamon_playground.common.contract import API_PREFIX
from tests.support.api import Api
from tests.support.procs import REPO, Proc, copy_example, stack_for, wait_for
from tests.support.projects import tiny_project

SMALL = {"LLAMON_PLAYGROUND_LOG_FILE_BYTES": "1024", "LLAMON_PLAYGROUND_LOG_FILE_BACKUPS": "2",
         "LLAMON_PLAYGROUND_HOST_LOG_FILE_BYTES": "4096",
         "LLAMON_PLAYGROUND_HOST_LOG_FILE_BACKUPS": "1"}


def _files(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and not p.is_socket()]


def _env(runtime_base: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LLAMON_PLAYGROUND_")}
    return {**env, "LLAMON_PLAYGROUND_RUNTIME_DIR": str(runtime_base),
            "LLAMON_PLAYGROUND_HOST_STOP_GRACE": "2", **SMALL}


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "llamon_playground", *args], env=env,
                          cwd=REPO, capture_output=True, text=True, timeout=90, check=False)


async def _requests(url: str, token: str, refused: int) -> None:
    """`refused` requests without the token or with a wrong one; 40 the door lets in that
    answer 404 (one log line each), so front.log has something to rotate; two Host
    restarts, so daemon.log has."""
    async with aiohttp.ClientSession() as http:
        for _ in range(2):
            async with http.post(f"{url}{API_PREFIX[1:]}/host/restart", json={},
                                 headers={"Authorization": f"Bearer {token}"}) as resp:
                assert resp.status == 200, await resp.text()
        for n in range(40):
            async with http.get(f"{url}{API_PREFIX[1:]}/runs/run_missing{n}",
                                headers={"Authorization": f"Bearer {token}"}) as resp:
                assert resp.status == 404
        for n in range(refused):
            headers = {"Authorization": "Bearer wrong-token-123456"} if n % 2 else {}
            async with http.get(f"{url}{API_PREFIX[1:]}/sessions", headers=headers) as resp:
                assert resp.status == 401


def test_up_and_up_detach_rotate_their_logs_summarise_refusals_and_never_log_the_token(
        tmp_path: Path, runtime_base: Path) -> None:
    project = copy_example(tmp_path)
    env = _env(runtime_base)
    runtime = None
    tokens = set()
    # The foreground `up`: the URL with the token goes to its terminal (here a file of the
    # test's, outside the runtime dir), never into a log.
    up = Proc([sys.executable, "-m", "llamon_playground", "up", str(project), "--port", "0"],
              env, tmp_path / "terminal.txt", REPO)
    try:
        wait_for(lambda: "open in a browser: " in up.output(), 60, "the front of `up`")
        url, token = up.output().split("open in a browser: ")[1].split()[0].split("?token=")
        tokens.add(token)
        asyncio.run(_requests(url, token, 300))
        up.signal(2)
        assert up.wait(60) == 0
    finally:
        up.stop()
    # Twice detached, stopped between: the daemon.log of three daemons, front.log of two
    # fronts, all rotated at 1 KiB.
    for _ in range(2):
        detached = _cli(env, "up", str(project), "--port", "0", "--detach")
        assert detached.returncode == 0, detached.stderr
        link = re.search(r"open in a browser: (\S+)", detached.stdout)
        assert link is not None, detached.stdout
        url, token = link[1].split("?token=")
        tokens.add(token)
        asyncio.run(_requests(url, token, 300))
        assert _cli(env, "stop", str(project)).returncode == 0
        runtime = next(p for p in runtime_base.iterdir() if p.is_dir())
        # Stopped, the front said its counts before it went.
        wait_for(lambda runtime=runtime: "more refused: 401 unauthorized"
                 in _all_text(runtime, "front.log"),
                 30, "the front's last refusal counts")
    assert runtime is not None
    for name in ("daemon.log", "front.log"):
        logs = sorted(runtime.glob(name + "*"))
        assert [p.name for p in logs] == [name, f"{name}.1", f"{name}.2"], logs
        # At 1 KiB: a file passes it only by what the process printed past its logger (the
        # front's announce lines), never by a flood.
        assert all(p.stat().st_size <= 1024 + 512 for p in logs), \
            [(p.name, p.stat().st_size) for p in logs]
        assert all(p.stat().st_mode & 0o777 == 0o600 for p in logs)
    # The last front's 300 refusals (its last requests): two lines, the first of them and
    # the count of the rest, said when it stopped.
    front_text = _all_text(runtime, "front.log")
    refused_lines = [ln for ln in front_text.splitlines() if "401 unauthorized" in ln]
    assert 2 <= len(refused_lines) <= 4, refused_lines
    assert "-> 401 unauthorized (more like it: one line a minute at most)" in refused_lines[-2]
    assert "299 more refused: 401 unauthorized in the last" in refused_lines[-1]
    # The token: in no file of the runtime dir but the one that keeps it, nor the project's.
    kept = {runtime / "front.token"}
    for path in _files(runtime_base) + _files(project / ".llamon"):
        if path in kept:
            continue
        data = path.read_bytes()
        for token in tokens:
            assert token.encode() not in data, f"the front's token is in {path}"
    assert "open in a browser" not in front_text


def _all_text(runtime: Path, name: str) -> str:
    """The log and its rotated files, oldest first."""
    return "".join(p.read_text(errors="replace")
                   for p in sorted(runtime.glob(name + "*"), reverse=True))


async def test_a_capture_token_split_across_writes_is_masked_and_host_log_rotates(
        tmp_path: Path, runtime_base: Path) -> None:
    project = tiny_project(tmp_path, "split")
    with stack_for(project, runtime_base,
                   extra_env={"LLAMON_PLAYGROUND_CRASH_LIMIT": "1", **SMALL}) as stack:
        stack.start_daemon()
        api = Api.for_socket(str(stack.settings.socket_path))
        try:
            session = await api.session()
            run = await api.wait_status(await api.start_run(session, "hello"))
            assert run["status"] == "failed" and run["reason"] == "runtime_unavailable"
            _code, doc = await api.call("GET", "host/logs?limit=1000")
            texts = [line["text"] for line in doc["lines"]]
            assert "env: LLAMON_CAPTURE_TOKEN=[REDACTED capture token] HOME=x" in texts, texts
            assert "bye [REDACTED capture token]" in texts, texts[-3:]
            assert "z" * (1 << 20) in texts, "the 3 MiB line, cut at exactly 1 MiB"
            token = (project / "tokens.txt").read_text().split()[0]
            assert all(token not in t for t in texts)
            for path in _files(project / ".llamon") + _files(runtime_base):
                assert token.encode() not in path.read_bytes(), f"token found in {path}"
                # Not even half of it: the split is masked, not cut apart.
                assert token[len(token) // 2:].encode() not in path.read_bytes(), path
            host_logs = sorted(stack.settings.runtime_dir.glob("host.log*"))
            assert [p.name for p in host_logs] == ["host.log", "host.log.1"]
            assert all(p.stat().st_size <= 4096 for p in host_logs), \
                [p.stat().st_size for p in host_logs]
        finally:
            await api.close()


async def test_a_llamon_symlink_is_refused_never_followed(tmp_path: Path,
                                                          runtime_base: Path) -> None:
    project = copy_example(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (project / ".llamon").symlink_to(elsewhere)
    env = _env(runtime_base)
    # The daemon refuses to start, saying which path and why; `up` says so too.
    up = _cli(env, "up", str(project), "--port", "0", "--detach")
    assert up.returncode != 0
    assert ".llamon is a symbolic link" in up.stderr and str(project) in up.stderr, up.stderr
    assert list(elsewhere.iterdir()) == []
    # Made a link while a daemon runs (a checkout under it): the first call that would
    # create history answers 409 history_path_refused, and nothing is written there.
    (project / ".llamon").unlink()
    with stack_for(project, runtime_base) as stack:
        stack.start_daemon()
        (project / ".llamon").symlink_to(elsewhere)
        api = Api.for_socket(str(stack.settings.socket_path))
        try:
            code, doc = await api.call("POST", "sessions", {})
            assert code == 409 and doc["detail"]["error"] == "history_path_refused", doc
            assert doc["detail"]["path"] == ".llamon"
            assert ".llamon is a symbolic link" in doc["detail"]["message"]
            assert str(tmp_path) not in doc["detail"]["message"]
            # The link under .llamon/playground is refused the same way.
            (project / ".llamon").unlink()
            (project / ".llamon").mkdir()
            (project / ".llamon" / "playground").symlink_to(elsewhere)
            code, doc = await api.call("POST", "sessions", {})
            assert code == 409 and doc["detail"]["path"] == ".llamon/playground", doc
        finally:
            await api.close()
    assert list(elsewhere.iterdir()) == []
