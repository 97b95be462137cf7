"""What the long-lived processes load just to read their command line: what they never use
stays out (each module stays in memory as long as the process lives; docs/benchmarks.md,
`up_pss_idle`)."""

from __future__ import annotations

import subprocess
import sys

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
