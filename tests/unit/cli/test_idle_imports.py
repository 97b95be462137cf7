"""What the long-lived processes load just to read their command line: what they never use
stays out (each module stays in memory as long as the process lives; docs/benchmarks.md,
`up_pss_idle`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

PROBE = """
import sys
from llamon_playground.cli.main import build_parser
build_parser().parse_args(["up", "--port", "0"])
print(sorted(name for name in ("importlib.metadata", "csv", "xml.etree.ElementTree")
             if name in sys.modules))
"""


def test_parsing_the_command_line_loads_no_package_metadata_nor_xml() -> None:
    # A fresh interpreter: this test process has loaded everything long ago.
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                         timeout=60, check=True)
    assert out.stdout.strip() == "[]"


UP_PROBE = """
import sys
from llamon_playground.cli.terminal import up
from llamon_playground.cli.terminal.traces import missing_extra_notice
from llamon_playground.daemon.introspect.host_checks import host_command_warnings
from llamon_playground.api.app import run_front
print(sorted(name for name in ("aiosqlite", "sqlite3", "llamon_playground.daemon.store")
             if name in sys.modules))
"""


def test_up_which_serves_the_front_loads_no_history_store() -> None:
    # What `up` imports to check the project and serve its front: the daemon reads history;
    # `up` never does, and keeps what it loads as long as it serves.
    out = subprocess.run([sys.executable, "-c", UP_PROBE], capture_output=True, text=True,
                         timeout=60, check=True)
    assert out.stdout.strip() == "[]"



SERVING_PROBE = """
import sys
from llamon_playground.cli import main as cli
cli.asyncio.run = lambda coro: coro.close()  # the daemon: set up, not served
cli.cmd_up = lambda args: 0  # `up`: its command line read, not run
assert cli.main(sys.argv[1:]) == 0
print(sorted(name for name in ("llamon_playground.cli.client",
                               "llamon_playground.cli.terminal.suite_commands",
                               "llamon_playground.cli.terminal.inspect_commands",
                               "llamon_playground.cli.terminal.sessions")
             if name in sys.modules))
"""


@pytest.mark.parametrize("command", [
    ["daemon"],
    ["-v", "--log-file", "{tmp}/up.log", "up", "--port", "0"],
], ids=["daemon", "up"])
def test_a_long_lived_command_loads_no_other_commands_modules(command: list[str],
                                                              tmp_path: Path) -> None:
    # The daemon and `up` (the front) read a command line that names only the commands that
    # serve: the client and the other commands' modules stay out of a process that lives for
    # days. (`up`'s own module, not run here, does load the client, to reach its daemon.)
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "p"\n')
    argv = [word.replace("{tmp}", str(tmp_path)) for word in command]
    out = subprocess.run([sys.executable, "-c", SERVING_PROBE, *argv, str(tmp_path)],
                         capture_output=True, text=True, timeout=60, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]", out.stdout
