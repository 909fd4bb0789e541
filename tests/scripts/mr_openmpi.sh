#!/bin/sh
# make check entry: the multi-rank tests of tests/mr.list under LAUNCHER=openmpi.
LAUNCHER=openmpi exec "$(dirname "$0")/run_mr.sh" "$@"
