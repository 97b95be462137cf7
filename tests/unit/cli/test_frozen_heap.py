"""The daemon and the front start serving with their startup heap frozen (common/heap.py):
a full collection later walks only what they allocated since. Checked in a child Python
(freezing is process-wide) that runs the CLI with `asyncio.run` replaced by a recorder."""

from __future__ import annotations

import os
import shutil
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


LATE = """
import asyncio, gc, sys
from llamon_playground.cli import main as cli
from llamon_playground.daemon import app
seen = []
async def recover(services):
    # Where the daemon has started everything and is about to serve: is the SDK's
    # provider class still one of the objects a full collection walks?
    from opentelemetry.sdk.trace import TracerProvider
    seen.append(any(obj is TracerProvider for obj in gc.get_objects()))
    raise RuntimeError("enough: the daemon started")
app.recover = recover
cli.main(sys.argv[1:])
print(seen[0] if seen else "never")
"""


def test_what_the_daemon_imports_to_export_traces_is_frozen_with_its_startup_heap(
        tmp_path: Path) -> None:
    """The OpenTelemetry SDK is imported only when export is on, after the CLI froze the
    heap: the daemon freezes it too before it serves, or every full collection walks it."""
    from tests.support.procs import short_tmpdir
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "p"\n')
    runtime = short_tmpdir("lpfz")
    env = {**os.environ, "LLAMON_PLAYGROUND_RUNTIME_DIR": str(runtime),
           "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"}
    try:
        done = subprocess.run([sys.executable, "-c", LATE, "daemon", str(tmp_path)], env=env,
                              capture_output=True, text=True, timeout=60, check=False)
    finally:
        shutil.rmtree(runtime, ignore_errors=True)
    assert done.stdout.split()[-1:] == ["False"], (done.stdout, done.stderr)
