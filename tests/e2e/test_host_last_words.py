"""A Host that writes a line and exits at once: its words reach the failure that ends the
run and the answer of an explicit start (the pipes are read to EOF before either is kept)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.api import Api
from tests.support.procs import stack_for

CHILD = Path(__file__).resolve().parents[1] / "children" / "last_words.sh"
LINE = "last words: cannot start, the config is missing"
TRIES = 20
# Explicit starts only: no automatic restart between the tries, no crashloop.
ENV = {"LLAMON_PLAYGROUND_CRASH_LIMIT": "1000", "LLAMON_PLAYGROUND_BACKOFF_BASE": "600"}


def quick_exit_project(root: Path) -> Path:
    project = root / "last_words"
    (project / "app").mkdir(parents=True)
    command = json.dumps(["/bin/sh", str(CHILD)])
    (project / "pyproject.toml").write_text(
        f'[project]\nname = "last-words"\nversion = "0"\n\n[tool.llamon]\nkind = "agent"\n'
        f"host_command = {command}\n")
    (project / "app" / "__init__.py").write_text("# watched\n")
    return project


@pytest.mark.slow
async def test_a_host_exiting_at_once_keeps_its_last_line(tmp_path: Path,
                                                          runtime_base: Path) -> None:
    with stack_for(quick_exit_project(tmp_path), runtime_base, extra_env=ENV) as stack:
        stack.start_daemon()
        api = Api.for_socket(str(stack.settings.socket_path))
        try:
            session = await api.session()
            held = 0
            for _ in range(TRIES):
                run = await api.wait_status(await api.start_run(session, "hello"))
                assert run["status"] == "failed" and run["reason"] == "runtime_unavailable"
                held += any(LINE in line for line in run["error"]["log_tail"])
            assert held == TRIES, f"{held} of {TRIES} failed runs held the Host's last line"
            code, doc = await api.call("POST", "host/start")
            assert code == 503
            assert any(LINE in line for line in doc["detail"]["log_tail"]), doc
        finally:
            await api.close()
