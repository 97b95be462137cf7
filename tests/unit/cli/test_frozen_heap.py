"""The daemon and the front start serving with their startup heap frozen (common/heap.py):
a full collection later walks only what they allocated since. Checked in a child Python
(freezing is process-wide) that runs the CLI with `asyncio.run` replaced by a recorder."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

CHILD = """
import asyncio, gc, sys
from llamon_playground.cli import main as cli
seen = []
def record(coro):
    seen.append(gc.get_freeze_count())
    coro.close()
cli.asyncio.run = record
cli.main(sys.argv[1:])
print(seen[0] if seen else -1)
"""


@pytest.mark.parametrize("command", [["daemon"], ["front", "--port", "0"]])
def test_a_long_lived_process_serves_with_its_startup_heap_frozen(
        command: list[str], tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "p"\n')
    done = subprocess.run([sys.executable, "-c", CHILD, *command, str(tmp_path)],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    frozen = int(done.stdout.split()[-1])
    # Thousands: the modules, classes and constants loaded to start.
    assert frozen > 10_000, done.stdout
