#!/bin/bash
# test_exports.sh - only the API is exported (DESIGN.md, "Exports are the API"): the
# dynamic symbol table of libmpishim.so defines MPI_*, PMPI_*, MPIX_*, PMPIX_*, pgc_* and,
# unless a sanitizer owns malloc, the allocator entry points the shared heap interposes
# (fabric/fab_malloc.c), nothing else; every function the public headers declare is among
# them (a declaration that lost its default visibility would fail to link programs), and no
# MPI_ function that they do not declare.
set -uo pipefail

top_builddir=${top_builddir:-$PWD}
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
lib=$top_builddir/.libs/libmpishim.so
# shellcheck source=tests/scripts/expect.sh
. "$(dirname "$0")/expect.sh"

command -v nm >/dev/null || { echo "SKIP: needs nm (apt-get install binutils)"; exit 77; }
if [ ! -r "$lib" ]; then
    echo "SKIP: needs the shared library $lib (configure without --disable-shared)"
    exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

nm -D --defined-only "$lib" | awk '{print $NF}' | sort -u >"$tmp/exported"
alloc="aligned_alloc calloc free malloc malloc_usable_size memalign posix_memalign pvalloc
realloc reallocarray valloc"
printf '%s\n' $alloc | sort >"$tmp/alloc"

expect "the library exports at least the MPI and pgc entry points" yes \
    "$(grep -qx PMPI_Send "$tmp/exported" && grep -qx pgc_all_reduce "$tmp/exported" &&
        echo yes || echo no)"
# AddressSanitizer adds an ODR indicator, __odr_asan.<name>, beside each exported variable.
others=$(grep -Ev '^(__odr_asan\.)?(MPI_|PMPI_|MPIX_|PMPIX_|pgc_)' "$tmp/exported" |
    comm -23 - "$tmp/alloc" | tr '\n' ' ')
expect "no internal name is exported (nm -D --defined-only)" "" "$others"

# With AddressSanitizer or ThreadSanitizer the sanitizer's allocator serves the process and
# fab_malloc.c defines none of these; otherwise all of them must be visible, or the shared
# heap would not see the program's allocations.
case " ${MPS_SAN_FLAGS:-} " in
*-fsanitize=address* | *-fsanitize=thread*) want_alloc= ;;
*) want_alloc=$(tr '\n' ' ' <"$tmp/alloc") ;;
esac
expect "the allocator entry points are exported when the library replaces malloc" \
    "$want_alloc" "$(comm -12 "$tmp/alloc" "$tmp/exported" | tr '\n' ' ')"

# Every function the public headers declare, by name: MPISHIM_PROTO(ret, Name, ...) gives
# MPI_Name and PMPI_Name, other MPISHIM_API lines name theirs, and pgc.h/pgc_status.h
# declare pgc_ functions (static inline helpers excepted).
{
    sed -n 's/^MPISHIM_PROTO([^,]*, *\([A-Za-z0-9_]*\),.*/MPI_\1\nPMPI_\1/p' \
        "$top_srcdir/include/mpi.h"
    grep -h '^MPISHIM_API' "$top_srcdir/include/mpi.h" |
        grep -o '\bP\?MPIX\?_[A-Za-z0-9_]*[[:space:]]*(' | tr -d ' ('
    cat "$top_srcdir/include/pgc.h" "$top_srcdir/include/pgc_status.h" |
        grep -Ev 'static inline|^[[:space:]]*(/?\*)' |
        grep -o '\bpgc_[a-z0-9_]*(' | tr -d '('
} | sort -u >"$tmp/declared"
expect "the headers declare some functions (the parser found them)" yes \
    "$([ "$(wc -l <"$tmp/declared")" -gt 300 ] && echo yes || echo no)"
expect "every function declared in include/*.h is exported" "" \
    "$(comm -23 "$tmp/declared" "$tmp/exported" | tr '\n' ' ')"

# And no other MPI_ function: a link-only probe (autoconf's AC_CHECK_FUNCS, mpi4py's build
# configuration) must not find a function mpi.h does not declare, such as the MPICH ABI's
# refusing MPI_File_open (those MPI_ names are in libmpi.so.12, tools/gen_abi_stubs.sh).
# Functions only (nm types T, W, i): MPICH's data objects (MPI_F_STATUS_IGNORE, ...) stay.
nm -D --defined-only "$lib" | awk '$2 ~ /^[TWi]$/ && $3 ~ /^MPI_/ {print $3}' | sort -u \
    >"$tmp/mpi_functions"
expect "libmpishim.so defines no MPI_ function that mpi.h does not declare" "" \
    "$(comm -23 "$tmp/mpi_functions" "$tmp/declared" | tr '\n' ' ')"

expect_done
