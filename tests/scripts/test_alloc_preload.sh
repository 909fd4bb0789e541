#!/bin/bash
# test_alloc_preload.sh - another allocator first in the process: jemalloc preloaded, as
# PyTorch users often do. The library's own calls to malloc still reach fabric/fab_malloc.c
# (they are bound locally), which must then forward them to jemalloc, so that a block that
# crosses the library's boundary goes back to the allocator that made it (glibc's free on a
# jemalloc block crashes, and so does the other way round).
#  - test_pgc_store: Store values are allocated inside the library, freed by the caller;
#  - mr_p2p, 2 ranks: large messages with the shared heap off (the ranks say why), every
#    byte checked; libfabric and libc allocate what the library frees, and the reverse;
#  - mr_pgc, 2 ranks: the process-group API end to end.
# Each crashed with "free(): invalid pointer" or SIGSEGV before fab_malloc.c forwarded.
set -uo pipefail

top_builddir=${top_builddir:-$PWD}
# shellcheck source=tests/scripts/expect.sh
. "$(dirname "$0")/expect.sh"

find_jemalloc() {
    local ldconfig
    ldconfig=$(command -v ldconfig || echo /sbin/ldconfig)
    "$ldconfig" -p 2>/dev/null | sed -n 's/^[[:space:]]*libjemalloc\.so\.2 .*=> //p' | head -1
}

je=$(find_jemalloc)
if [ -z "$je" ]; then
    echo "SKIP: needs jemalloc (Debian package libjemalloc2) to preload"
    exit 77
fi
# (ldd's output whole first: with pipefail, grep -q quitting early could fail the pipe)
libs=$(ldd "$top_builddir/.libs/libmpishim.so" 2>/dev/null)
if grep -q 'lib[at]san' <<<"$libs"; then
    echo "SKIP: this build uses a sanitizer, whose allocator must come first itself"
    exit 77
fi
if [ ! -x "$top_builddir/tests/unit/test_pgc_store" ]; then
    echo "SKIP: needs the unit tests (cmocka) for test_pgc_store"
    exit 77
fi
echo "preloading $je"

# Runs "$@" with jemalloc preloaded, output in $out; expects exit status 0 and shows the
# output's end when it is not.
run_preloaded() {
    local name=$1 rc
    shift
    out=$(LD_PRELOAD=$je "$@" 2>&1)
    rc=$?
    expect "$name under jemalloc: exit status" 0 "$rc"
    [ "$rc" -eq 0 ] || tail -20 <<<"$out"
}

run_preloaded test_pgc_store timeout 120 "$top_builddir/tests/unit/test_pgc_store"
expect "test_pgc_store under jemalloc: all tests passed" 1 "$(grep -c '^\[  PASSED  \]' <<<"$out")"

run_preloaded "mr_p2p, 2 ranks" mr_logged 2 mr_p2p 120
expect "both ranks leave the shared heap off and say why" 2 \
    "$(grep -c 'shared heap off: another allocator serves malloc' <<<"$out")"

run_preloaded "mr_pgc, 2 ranks" mr_logged 2 mr_pgc 120
expect_done
