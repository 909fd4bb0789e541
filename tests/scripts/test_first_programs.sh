#!/bin/bash
# test_first_programs.sh - README's first programs (examples/first_mpi.c, first_pgc.c) are the
# files' code after their opening comment, build with the build tree's mpicc as README shows,
# and run under its mpiexec at 1, 2 and 4 ranks with the sums they must print.
set -uo pipefail

top_builddir=${top_builddir:-$PWD}
top_srcdir=${top_srcdir:-$top_builddir/..}
mpicc=$top_builddir/tools/mpicc
mpiexec=$top_builddir/tools/mpiexec
[ -x "$mpiexec" ] || { echo "test_first_programs.sh: $mpiexec is not built"; exit 99; }
export MPISHIM_WRAPPER_BUILDDIR=${MPISHIM_WRAPPER_BUILDDIR:-$top_builddir}
export MPISHIM_TIMEOUT=${MPISHIM_TIMEOUT:-60}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0

result() { # NAME OK: count and print one check
    if [ "$2" = 1 ]; then
        echo "PASS $1"; pass=$((pass + 1))
    else
        echo "FAIL $1"; sed 's/^/    /' "$tmp/out"; fail=$((fail + 1))
    fi
}

# README's code block under "## <title>" against the file after its opening comment.
readme_block() {
    awk -v t="$1" '$0 == t { in_s = 1; next } in_s && /^```c$/ { in_c = 1; next }
        in_c && /^```$/ { exit } in_c { print }' "$top_srcdir/README.md"
}
readme_block "## A first MPI program" >"$tmp/readme_mpi.c"
readme_block "## A first process-group program" >"$tmp/readme_pgc.c"
for p in mpi pgc; do
    sed '1,/^ \*\/$/d' "$top_srcdir/examples/first_$p.c" >"$tmp/file_$p.c"
    diff -u "$tmp/file_$p.c" "$tmp/readme_$p.c" >"$tmp/out" 2>&1
    result "README shows examples/first_$p.c as it is" \
        "$([ $? = 0 ] && [ -s "$tmp/file_$p.c" ] && echo 1)"
done
for p in first_mpi first_pgc; do
    "$mpicc" -o "$tmp/$p" "$top_srcdir/examples/$p.c" >"$tmp/out" 2>&1
    result "mpicc -o $p $p.c" "$([ -x "$tmp/$p" ] && echo 1)"
done
for n in 1 2 4; do
    # first_mpi: every rank prints the sum 1 + ... + n; rank 1 the number rank 0 sent.
    want=$((n * (n + 1) / 2))
    timeout 120 "$mpiexec" -n $n "$tmp/first_mpi" >"$tmp/out" 2>&1
    ok=$([ $? = 0 ] && [ "$(grep -c "of $n: sum $want (expected $want)" "$tmp/out")" = $n ] &&
        { [ $n = 1 ] || grep -q "rank 1 received 42 from rank 0" "$tmp/out"; } && echo 1)
    result "first_mpi on $n ranks" "$ok"
    # first_pgc: every rank holds {0 + ... + (n-1), n}.
    timeout 120 "$mpiexec" -n $n "$tmp/first_pgc" >"$tmp/out" 2>&1
    ok=$([ $? = 0 ] && [ "$(grep -c ": {$((n * (n - 1) / 2)), $n}\$" "$tmp/out")" = $n ] && echo 1)
    result "first_pgc on $n ranks" "$ok"
done
echo "test_first_programs.sh: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
