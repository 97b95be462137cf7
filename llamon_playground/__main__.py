"""`python -m llamon_playground` is the `llamon-playground` command."""

import sys

from llamon_playground.cli.entry import main

sys.exit(main())
