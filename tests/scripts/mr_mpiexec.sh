#!/bin/sh
# make check entry: the multi-rank tests of tests/mr.list under LAUNCHER=mpiexec.
LAUNCHER=mpiexec exec "$(dirname "$0")/run_mr.sh" "$@"
