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
print(sorted(name for name in ("importlib.metadata", "zipfile", "csv") if name in sys.modules))
"""


def test_parsing_the_command_line_loads_no_package_metadata() -> None:
    # A fresh interpreter: this test process has loaded everything long ago.
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                         timeout=60, check=True)
    assert out.stdout.strip() == "[]"
