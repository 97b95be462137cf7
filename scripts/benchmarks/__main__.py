"""`python -m scripts.benchmarks`: what `scripts/bench` runs."""

from __future__ import annotations

import sys

from scripts.benchmarks.cli import main

if __name__ == "__main__":
    sys.exit(main())
