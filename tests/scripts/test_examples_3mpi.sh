#!/bin/bash
# test_examples_3mpi.sh - the classic example programs (examples/classic.include) compile
# unchanged with our mpicc, Open MPI's mpicc.openmpi and MPICH's mpicc.mpich, and give the
# same answers under all three at 1, 3 and 4 ranks.
#
# Each example is built by each available wrapper and run by its own launcher (our
# tools/mpiexec, mpirun.openmpi, mpiexec.mpich); only rank 0 prints, and the output does
# not depend on the library or the timing, so the outputs must be byte-identical. The
# examples are also written so that the answer does not depend on the number of ranks:
# each case also checks our output against our 1-rank output.
# A peer whose packages are missing is skipped with a line naming the package.
# Prints "PASS example nprocs" or "FAIL example nprocs (why)" per case, then
# "N passed, N failed". EX_TIMEOUT: seconds per run (120). EXAMPLES: the list to run.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top_srcdir=${top_srcdir:-$(cd "$here/../.." && pwd)}
top_builddir=${top_builddir:-$PWD}
export MPISHIM_WRAPPER_BUILDDIR=${MPISHIM_WRAPPER_BUILDDIR:-$top_builddir}
per_run=${EX_TIMEOUT:-120}
examples=${EXAMPLES:-pi_monte_carlo jacobi2d master_worker parallel_sort}
nprocs_list=${EX_NPROCS:-1 3 4}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# For each library: its compiler wrapper, its launcher (words) and the packages providing them.
declare -A cc launch pkg
cc[ours]=$top_builddir/tools/mpicc
launch[ours]="$top_builddir/tools/mpiexec -n"
cc[openmpi]=mpicc.openmpi
launch[openmpi]="mpirun.openmpi --allow-run-as-root --oversubscribe -n"
pkg[openmpi]="openmpi-bin and libopenmpi-dev"
cc[mpich]=mpicc.mpich
launch[mpich]="mpiexec.mpich -n"
pkg[mpich]="mpich and libmpich-dev"

[ -x "${cc[ours]}" ] || { echo "test_examples_3mpi.sh: ${cc[ours]} is not built" >&2; exit 2; }
have=(ours)
for i in openmpi mpich; do
    first=${launch[$i]%% *}
    if command -v "${cc[$i]}" >/dev/null && command -v "$first" >/dev/null; then
        have+=("$i")
    else
        echo "SKIP peer $i: needs ${cc[$i]} and $first (apt-get install ${pkg[$i]})"
    fi
done

pass=0 fail=0
result() { # result OK|why example nprocs
    if [ "$1" = OK ]; then
        echo "PASS $2 $3"
        pass=$((pass + 1))
    else
        echo "FAIL $2 $3 ($1)"
        fail=$((fail + 1))
    fi
}

# Builds every example with every wrapper; a failed build is one failed case.
declare -A built
for ex in $examples; do
    for i in "${have[@]}"; do
        if "${cc[$i]}" -O2 -o "$tmp/$ex.$i" "$top_srcdir/examples/$ex.c" -lm \
            >"$tmp/$ex.$i.build" 2>&1; then
            built[$ex.$i]=1
        else
            cat "$tmp/$ex.$i.build"
            result "does not compile with ${cc[$i]}" "$ex" build
        fi
    done
done

# Runs one example with one library at n ranks; the output goes to $tmp/out.ex.i.n.
run() {
    local ex=$1 i=$2 n=$3 out=$tmp/out.$1.$2.$3
    # shellcheck disable=SC2086 # the launcher words are split on purpose
    timeout -k 5 "$per_run" ${launch[$i]} "$n" "$tmp/$ex.$i" </dev/null >"$out" 2>"$out.err"
    local rc=$?
    if [ $rc != 0 ]; then
        [ $rc = 124 ] && echo "timed out after $per_run s" >>"$out.err"
        echo "--- $ex under $i at $n ranks exited $rc:" >&2
        tail -n 20 "$out.err" >&2
        return 1
    fi
    [ -s "$out" ] || { echo "--- $ex under $i at $n ranks printed nothing" >&2; return 1; }
}

for ex in $examples; do
    for n in $nprocs_list; do
        why=OK
        for i in "${have[@]}"; do
            [ -n "${built[$ex.$i]:-}" ] || { why="not built with $i"; continue; }
            run "$ex" "$i" "$n" || { why="failed under $i"; continue; }
            if [ "$i" != ours ] && [ -s "$tmp/out.$ex.ours.$n" ] &&
                ! cmp -s "$tmp/out.$ex.ours.$n" "$tmp/out.$ex.$i.$n"; then
                echo "--- $ex at $n ranks: ours and $i differ:" >&2
                diff "$tmp/out.$ex.ours.$n" "$tmp/out.$ex.$i.$n" >&2
                why="output differs from $i"
            fi
        done
        first_n=${nprocs_list%% *}
        if [ "$why" = OK ] && ! cmp -s "$tmp/out.$ex.ours.$first_n" "$tmp/out.$ex.ours.$n"; then
            echo "--- $ex: ours at $first_n and at $n ranks differ:" >&2
            diff "$tmp/out.$ex.ours.$first_n" "$tmp/out.$ex.ours.$n" >&2
            why="output differs from $first_n ranks"
        fi
        [ "$why" = OK ] && [ "$n" = "$first_n" ] && sed 's/^/    /' "$tmp/out.$ex.ours.$n"
        result "$why" "$ex" "$n"
    done
done

echo "$pass passed, $fail failed"
[ $fail = 0 ]
