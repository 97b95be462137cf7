"""The OpenAPI document, served and fuzzed: schemathesis against a live front and daemon."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from llamon_playground.daemon.http.openapi import PREFIX, build_document
from tests.support.door import Front, door_stack, start_front  # noqa: F401  (shared fixture)
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
    what the first run wrote does not change."""
    return start_front(door_stack)


async def fetch_document(front: Front, where: Path) -> Path:
    async with front.session() as http, http.get(f"{PREFIX}/openapi.json") as resp:
        assert resp.status == 200
        doc = await resp.json()
    assert doc == orjson.loads(orjson.dumps(build_document()))
    path = where / "openapi.json"
    path.write_bytes(orjson.dumps(doc))
    return path


def schemathesis(front: Front, schema: Path, *args: str,
                 bounds: list[str] = BOUNDS) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(ST), "--config-file", str(CONFIG), "run", str(schema), "--url", front.url,
         "--no-color", *bounds, *args],
        cwd=schema.parent, capture_output=True, text=True, timeout=300,
        env={"SCHEMATHESIS_HOOKS": str(HOOKS), "PATH": "/usr/bin:/bin"})


async def test_schemathesis_with_the_token_finds_no_5xx_and_no_schema_mismatch(
        live: Front, tmp_path: Path) -> None:
    schema = await fetch_document(live, tmp_path)
    result = schemathesis(live, schema, "--checks", "all", "--exclude-checks", EXCLUDED,
                          "--header", f"Authorization: Bearer {live.token}",
                          "--header", "Content-Type: application/json")
    assert result.returncode == 0, result.stdout[-8000:] + result.stderr[-2000:]
    assert " passed" in result.stdout and "failed" not in result.stdout.split("SUMMARY")[-1]


async def test_schemathesis_without_the_token_gets_401_everywhere(live: Front,
                                                                  tmp_path: Path) -> None:
    schema = await fetch_document(live, tmp_path)
    result = schemathesis(live, schema, "--checks", "answers_401",
                          "--header", "Content-Type: application/json", bounds=DOOR_BOUNDS)
    assert result.returncode == 0, result.stdout[-8000:] + result.stderr[-2000:]
