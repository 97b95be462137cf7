"""The OpenAPI document, served and fuzzed: schemathesis against a live front and daemon."""

from __future__ import annotations

import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import orjson
import pytest

from llamon_playground.daemon.http.openapi import PREFIX, build_document
from tests.support.door import Front, start_front
from tests.support.procs import Stack

HOOKS = Path(__file__).with_name("schemathesis_hooks.py")
CONFIG = Path(__file__).with_name("schemathesis.toml")
ST = Path(sys.executable).with_name("st")
# Every phase (coverage, fuzzing, stateful chains through the document's links: create a
# session -> create a run -> read it, its events, its snippets -> cancel, rerun), positive
# and negative data, 25 examples an operation: ~30 s on the two cores the suite shares.
# Seeded, so a failure replays. /events never ends (the project's live stream): the fuzzer
# leaves it to test_host_api and test_guard. Per-operation settings: schemathesis.toml.
COMMON = ["--seed", "6", "--no-shrink", "--request-timeout", "30", "--mode", "all",
          "--generation-database", "none", "--exclude-path", f"{PREFIX}/events"]
BOUNDS = ["--max-examples", "25", "--phases", "examples,coverage,fuzzing,stateful", *COMMON]
# Without the token every request meets the door before any route reads it, so what counts
# is that every operation is asked, with and without the bodies and parameters it declares:
# the coverage phase does that (its boundary cases for each), a few fuzzed examples add
# shapes; the stateful chains add nothing here (their first step is refused), and 25
# fuzzed examples an operation take the same path 25 times. ~6 s instead of ~17 s.
DOOR_BOUNDS = ["--max-examples", "5", "--phases", "examples,coverage,fuzzing", *COMMON]
# Every check but two: `answers_401` is the token-less run's own, and `use_after_free`
# reads DELETE as deletion while DELETE /runs/{id} cancels a run that stays in history
# (the check judges the later read, so it cannot be scoped to that DELETE; session
# deletion is covered by test_data_delete).
EXCLUDED = "answers_401,use_after_free"


@pytest.fixture(scope="module")
def live(door_stack: Stack) -> Front:
    """One daemon and front for both runs: the token-less one only reads the door, which
    what the other run writes does not change."""
    return start_front(door_stack)


def served_document(front: Front) -> bytes:
    """The document the front serves, as the token's bearer reads it."""
    request = urllib.request.Request(f"{front.url}{PREFIX}/openapi.json", headers=front.auth())
    with urllib.request.urlopen(request, timeout=30) as resp:
        assert resp.status == 200
        body: bytes = resp.read()
    return body


def fetch_document(front: Front, where: Path) -> Path:
    doc = orjson.loads(served_document(front))
    assert doc == orjson.loads(orjson.dumps(build_document()))
    path = where / "openapi.json"
    path.write_bytes(orjson.dumps(doc))
    return path


def schemathesis_argv(front: Front, schema: Path, bounds: list[str], *args: str) -> list[str]:
    return [str(ST), "--config-file", str(CONFIG), "run", str(schema), "--url", front.url,
            "--no-color", *bounds, *args]


ST_ENV = {"SCHEMATHESIS_HOOKS": str(HOOKS), "PATH": "/usr/bin:/bin"}


@dataclass
class Running:
    """A schemathesis run under way, its output going to files beside its schema."""

    proc: subprocess.Popen[bytes]
    out: Path
    err: Path

    def finish(self, timeout: float) -> tuple[int, str]:
        """(exit code, the tail of what it printed) once it has ended."""
        code = self.proc.wait(timeout)
        return code, self.out.read_text()[-8000:] + self.err.read_text()[-2000:]


@pytest.fixture(scope="module")
def door_run(live: Front, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    """The token-less run, started when the first test of the module starts, so that it runs
    beside the token's run: each keeps one of the two cores busy (they share the daemon and
    front, and what the token's run writes never reaches past the door)."""
    where = tmp_path_factory.mktemp("door")
    schema = fetch_document(live, where)
    out, err = where / "stdout.txt", where / "stderr.txt"
    with out.open("wb") as stdout, err.open("wb") as stderr:
        proc = subprocess.Popen(
            schemathesis_argv(live, schema, DOOR_BOUNDS, "--checks", "answers_401",
                              "--header", "Content-Type: application/json"),
            cwd=where, stdout=stdout, stderr=stderr, env=ST_ENV)
    try:
        yield Running(proc, out, err)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)


def test_schemathesis_with_the_token_finds_no_5xx_and_no_schema_mismatch(
        live: Front, door_run: Running, tmp_path: Path) -> None:
    schema = fetch_document(live, tmp_path)
    result = subprocess.run(
        schemathesis_argv(live, schema, BOUNDS, "--checks", "all", "--exclude-checks", EXCLUDED,
                          "--header", f"Authorization: Bearer {live.token}",
                          "--header", "Content-Type: application/json"),
        cwd=schema.parent, capture_output=True, text=True, timeout=300, env=ST_ENV, check=False)
    assert result.returncode == 0, result.stdout[-8000:] + result.stderr[-2000:]
    assert " passed" in result.stdout and "failed" not in result.stdout.split("SUMMARY")[-1]


def test_schemathesis_without_the_token_gets_401_everywhere(door_run: Running) -> None:
    code, printed = door_run.finish(timeout=300)
    assert code == 0, printed
