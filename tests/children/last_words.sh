#!/bin/sh
# A Host that says why on stderr and exits 1 at once (within milliseconds of its start).
echo "last words: cannot start, the config is missing" >&2
exit 1
