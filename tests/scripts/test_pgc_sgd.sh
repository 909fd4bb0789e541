#!/bin/bash
# test_pgc_sgd.sh - distributed synchronous SGD (examples/pgc_sgd) reaches the same weights
# on 1, 2 and 4 ranks (within floating-point tolerance: only the order of the sums in the
# gradient all_reduce differs), and the DDP-style bucketed reducer gives the same weights
# as the tutorial's per-parameter all_reduce loop on the same number of ranks.
# Compares the "weights checksum: SUM WEIGHTED" line that rank 0 prints.
set -uo pipefail

top_builddir=${top_builddir:-$PWD}
SGD=$top_builddir/examples/pgc_sgd
MPIEXEC=$top_builddir/tools/mpiexec
[ -x "$SGD" ] || { echo "SKIP: needs examples/pgc_sgd (built by make from examples/pgc.include)"; exit 77; }
[ -x "$MPIEXEC" ] || { echo "test_pgc_sgd.sh: $MPIEXEC is not built"; exit 99; }
failures=0

# checksum N ARGS...: the two numbers of rank 0's checksum line.
checksum() {
    local n=$1
    shift
    timeout 300 "$MPIEXEC" -n "$n" "$SGD" --epochs 4 --quiet "$@" </dev/null |
        sed -n 's/^weights checksum: //p'
}

# close NAME A B TOL: both numbers of A and B agree within relative TOL.
close() {
    if [ -n "$2" ] && [ -n "$3" ] && awk -v a="$2" -v b="$3" -v t="$4" 'BEGIN {
            split(a, x, " "); split(b, y, " ");
            for (i = 1; i <= 2; i++) {
                d = x[i] - y[i]; if (d < 0) d = -d;
                m = x[i] < 0 ? -x[i] : x[i]; if (m < 1) m = 1;
                if (d > t * m) exit 1;
            }
            exit 0 }'; then
        echo "ok   - $1 ($2 vs $3)"
    else
        echo "FAIL - $1 ($2 vs $3, tolerance $4)"
        failures=$((failures + 1))
    fi
}

c1=$(checksum 1)
c2=$(checksum 2)
c4=$(checksum 4)
close "SGD on 2 ranks reaches the weights of 1 rank" "$c1" "$c2" 1e-5
close "SGD on 4 ranks reaches the weights of 1 rank" "$c1" "$c4" 1e-5
# The reducer sums the same values with the same algorithm where the bucket holds exactly
# one gradient, and a differently chunked one otherwise: equal within rounding.
r2=$(checksum 2 --reducer --bucket-cap 1024)
r4=$(checksum 4 --reducer)
close "the bucketed reducer (2 buckets) gives the per-parameter weights on 2 ranks" "$c2" "$r2" 1e-6
close "the bucketed reducer (1 bucket) gives the per-parameter weights on 4 ranks" "$c4" "$r4" 1e-6

[ $failures = 0 ] || { echo "$failures failed"; exit 1; }
echo "all passed"
