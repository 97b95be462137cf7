"""A resumed run whose chain's first run is no longer in history: its snippets (run for
real, in bash and Python) say why it cannot be sent again and exit 1."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from llamon_playground.daemon.introspect.snippets import build_snippets


def test_a_chain_without_its_start_says_why_instead_of_sending(tmp_path: Path) -> None:
    orphan = {"id": "run_b", "parent_run_id": "run_a", "context_id": "ctx",
              "task_id": "task-ended", "input": {"parts": [{"kind": "text", "text": "Ada"}]}}
    answer = build_snippets([orphan], lambda sha: b"", "http://127.0.0.1:9/")
    assert answer["messages"] == 0 and answer["run_id"] == "run_b"
    script = tmp_path / "snippet.py"
    script.write_text(answer["python"])
    for argv in (["bash", "-c", answer["curl"]], [sys.executable, "-I", "-S", str(script)]):
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
        assert done.returncode == 1, argv
        assert "run run_a is missing" in done.stderr and "cannot be sent again" in done.stderr
        assert "task-ended" not in answer["curl"] + answer["python"]
