# expect.sh - sourced by the script tests that compare values: expect NAME WANT GOT prints
# "ok   - NAME" or "FAIL - NAME" with both values quoted, counting failures; expect_done
# prints the count and returns non-zero if any failed (the script's last command). Scripts
# set top_builddir before sourcing it.
failures=0

expect() {
    if [ "$2" = "$3" ]; then
        echo "ok   - $1"
    else
        echo "FAIL - $1"
        echo "       expected: $(printf %q "$2")"
        echo "       got:      $(printf %q "$3")"
        failures=$((failures + 1))
    fi
}

# mr_logged RANKS PROG SECONDS: tests/mr/PROG on RANKS ranks under our mpiexec with info
# logging, stdout and stderr together, killed after SECONDS; the caller's environment
# (MPISHIM_* settings) goes with it.
mr_logged() {
    MPISHIM_LOG_LEVEL=info timeout "$3" "$top_builddir/tools/mpiexec" -n "$1" \
        "$top_builddir/tests/mr/$2" 2>&1
}

expect_done() {
    echo "$failures failed"
    [ "$failures" -eq 0 ]
}
