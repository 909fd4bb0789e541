#!/bin/bash
# test_pmpi.sh - the profiling interface, linked and preloaded, at 1 and 3 ranks.
set -uo pipefail
top_builddir=${top_builddir:-$PWD}
mpiexec=$top_builddir/tools/mpiexec
lib=$top_builddir/tests/mr/.libs/libprofcount.so
pass=0 fail=0
run() {
    local name=$1
    shift
    if timeout 120 "$@"; then
        echo "PASS $name"; pass=$((pass + 1))
    else
        echo "FAIL $name"; fail=$((fail + 1))
    fi
}
for n in 1 3; do
    run "linked -n $n" "$mpiexec" -n $n "$top_builddir/tests/mr/mr_pmpi"
    run "preloaded -n $n" "$mpiexec" -n $n -x "LD_PRELOAD=$lib" "$top_builddir/tests/mr/mr_pmpi_plain"
done
# Without a profiling library the check must fail: the test can tell the difference.
if timeout 60 "$top_builddir/tests/mr/mr_pmpi_plain" >/dev/null 2>&1; then
    echo "FAIL plain program believed it was profiled"; fail=$((fail + 1))
else
    echo "PASS plain program sees no profiling library"; pass=$((pass + 1))
fi
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
