#!/bin/sh
# make check entry: the multi-rank tests of tests/mr_launchers.list (a subset) under LAUNCHER=openmpi.
LAUNCHER=openmpi exec "$(dirname "$0")/run_mr.sh" "${1:-$(dirname "$0")/../mr_launchers.list}"
