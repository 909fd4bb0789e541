#!/bin/bash
# test_function_list.sh - doc/mpi-functions.md is current: tools/gen_function_list.sh
# regenerates it into a temporary file from include/mpi.h, mpi_shim/shim_unsupported.c and
# the built libmpishim.so, which must define MPI_<name> and PMPI_<name> for every declared
# function; the result must equal the committed file. Also checks that the generator does
# fail when the library lacks the functions (so this test can fail).
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top_srcdir=${top_srcdir:-$(cd "$here/../.." && pwd)}
top_builddir=${top_builddir:-$PWD}
export top_srcdir
gen=$top_srcdir/tools/gen_function_list.sh
lib=$top_builddir/.libs/libmpishim.so
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0

command -v nm >/dev/null || { echo "SKIP: needs nm (apt-get install binutils)"; exit 77; }
if [ ! -r "$lib" ]; then
    echo "SKIP: needs the shared library $lib (configure without --disable-shared)"
    exit 77
fi

if "$gen" -o "$tmp/list.md" "$lib"; then
    if cmp -s "$tmp/list.md" "$top_srcdir/doc/mpi-functions.md"; then
        echo "ok   - doc/mpi-functions.md matches include/mpi.h and the library"
    else
        echo "FAIL - doc/mpi-functions.md is out of date; regenerate it with"
        echo "       top_builddir=<build dir> tools/gen_function_list.sh. Difference:"
        diff -u "$top_srcdir/doc/mpi-functions.md" "$tmp/list.md" | head -40
        failures=$((failures + 1))
    fi
else
    echo "FAIL - gen_function_list.sh found declared functions the library lacks (above)"
    failures=$((failures + 1))
fi

# A library without the MPI functions (the C library) must be refused.
libc=$(ldd "$lib" | awk '$1 ~ /^libc\.so/ { print $3 }')
if [ -n "$libc" ] && "$gen" -o "$tmp/bad.md" "$libc" 2>"$tmp/bad.err"; then
    echo "FAIL - gen_function_list.sh accepted $libc, which defines no MPI function"
    failures=$((failures + 1))
elif [ -n "$libc" ]; then
    echo "ok   - gen_function_list.sh refuses a library without the functions" \
        "($(wc -l <"$tmp/bad.err") missing symbols named)"
fi

echo "$failures failed"
[ $failures = 0 ]
