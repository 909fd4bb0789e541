#!/bin/bash
# run_all.sh - the whole test suite from a checkout: autogen, configure in build-ci/,
# make, make check (and make distcheck with RUN_DISTCHECK=1). README and .ci/run both
# call this. On failure it prints the test-suite.log (the logs of the failed tests).
#   BUILD_DIR       build folder (default: build-ci)
#   AUTOGEN=1       run ./autogen.sh even when configure exists
#   MAKE_JOBS       parallel make jobs (default: 2)
#   CONFIGURE_ARGS  extra configure arguments (default: none; CI may add --enable-werror)
# The srun tests start a one-node Slurm (tests/scripts/slurm_cluster.sh up) and leave it
# running; `tests/scripts/slurm_cluster.sh down` stops it.
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
build=${BUILD_DIR:-build-ci}
jobs=${MAKE_JOBS:-2}

# A fresh checkout has no configure yet; an existing one is kept up to date by make's
# rebuild rules (AUTOGEN=1 forces a full regeneration).
if [ ! -x configure ] || [ "${AUTOGEN:-0}" = 1 ]; then
    ./autogen.sh
fi
mkdir -p "$build"
cd "$build"
# shellcheck disable=SC2086 # CONFIGURE_ARGS is a list of words
"$src/configure" ${CONFIGURE_ARGS-}
make -j"$jobs"
if ! make -j"$jobs" check; then
    echo "=== make check failed: $PWD/test-suite.log ===" >&2
    cat test-suite.log >&2 || true
    exit 1
fi
if [ "${RUN_DISTCHECK:-0}" = 1 ]; then
    make -j"$jobs" distcheck
fi
echo "run_all.sh: all tests passed"
