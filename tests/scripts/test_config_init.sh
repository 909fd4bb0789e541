#!/bin/bash
# test_config_init.sh - an invalid MPISHIM_* value ends MPI_Init and pgc_init_process_group
# with an error naming the call, the variable and the value, at once (not a silent default,
# and not a hang); a valid value with a suffix runs; an unknown MPISHIM_* name is a warning.
# Runs tests/mr/mr_smoke (MPI) and tests/mr/mr_pgc_init (pgc) at 1 rank under the build
# tree's mpiexec.
set -uo pipefail

top_builddir=${top_builddir:-$PWD}
mpiexec=$top_builddir/tools/mpiexec
mpi_prog=$top_builddir/tests/mr/mr_smoke
pgc_prog=$top_builddir/tests/mr/mr_pgc_init
for f in "$mpiexec" "$mpi_prog" "$pgc_prog"; do
    [ -x "$f" ] || { echo "test_config_init.sh: $f is not built"; exit 99; }
done
out=$(mktemp)
trap 'rm -f "$out"' EXIT
export MPISHIM_TIMEOUT=${MPISHIM_TIMEOUT:-60}
pass=0 fail=0

# check NAME WANT_RC PATTERN command...: the command must exit with WANT_RC ("nonzero" for
# any failure) and print a line matching PATTERN (an extended regex).
check() {
    local name=$1 want=$2 pattern=$3 rc
    shift 3
    timeout 60 "$@" >"$out" 2>&1
    rc=$?
    if [ "$rc" -eq 124 ]; then
        echo "FAIL $name: hung"; fail=$((fail + 1))
    elif { [ "$want" = nonzero ] && [ "$rc" -eq 0 ]; } ||
        { [ "$want" != nonzero ] && [ "$rc" -ne "$want" ]; }; then
        echo "FAIL $name: exit $rc (want $want)"; sed 's/^/    /' "$out"; fail=$((fail + 1))
    elif ! grep -Eq "$pattern" "$out"; then
        echo "FAIL $name: no line matching '$pattern' in:"; sed 's/^/    /' "$out"
        fail=$((fail + 1))
    else
        echo "PASS $name"; pass=$((pass + 1))
    fi
}

check "MPI_Init refuses a size with an unknown suffix" nonzero \
    'MPI_Init \(rank 0\): MPISHIM_EAGER_MAX="32x" is not a size in bytes' \
    env MPISHIM_EAGER_MAX=32x "$mpiexec" -n 1 "$mpi_prog"
check "MPI_Init refuses an unknown algorithm, listing the names" nonzero \
    'MPI_Init \(rank 0\): MPISHIM_COLL_ALLREDUCE="rign" is not one of auto, recursive_doubling' \
    env MPISHIM_COLL_ALLREDUCE=rign "$mpiexec" -n 1 "$mpi_prog"
check "MPI_Init refuses a negative timeout" nonzero \
    'MPI_Init \(rank 0\): MPISHIM_TIMEOUT="-5" is not a number of seconds above 0' \
    env MPISHIM_TIMEOUT=-5 "$mpiexec" -n 1 "$mpi_prog"
check "pgc_init_process_group refuses a size with an unknown suffix" 0 \
    'failed as expected with PGC_ERR_INVALID_ARG: pgc_init_process_group: MPISHIM_HEAP_MIN="1t"' \
    env MPISHIM_HEAP_MIN=1t "$mpiexec" -n 1 "$pgc_prog" --expect-fail
check "a size with a suffix and a name in capitals run" 0 'mr_smoke' \
    env MPISHIM_EAGER_MAX=64k MPISHIM_COLL_ALLREDUCE=RING "$mpiexec" -n 1 "$mpi_prog"
check "an unknown MPISHIM_ name is a warning that suggests the nearest" 0 \
    'MPISHIM_EAGERMAX is not a variable of this library .*did you mean MPISHIM_EAGER_MAX\?' \
    env MPISHIM_EAGERMAX=64k "$mpiexec" -n 1 "$mpi_prog"

echo "test_config_init.sh: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
