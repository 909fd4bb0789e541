#!/bin/bash
# test_mpich_abi.sh - programs built with Debian's MPICH wrapper (mpicc.mpich, MPICH's mpi.h
# and -lmpich) run unchanged on mpishim: the build tree's libmpi.so.12, under the names
# `make install` gives it in lib/mpich-abi (libmpi.so.12 and libmpich.so.12), found through
# LD_LIBRARY_PATH and started by our mpiexec at 2 ranks. The programs (tests/mpich_abi/)
# check their results themselves: a ping-pong checking every byte, MPI_UNWEIGHTED with
# MPI_F_STATUS_IGNORE and MPI_Status_c2f/f2c, and MPI-4.0 large-count calls. Also: every
# MPI_/PMPI_ symbol MPICH's library exports is exported by ours.
set -uo pipefail

top_builddir=${top_builddir:-$PWD}
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
# shellcheck source=tests/scripts/expect.sh
. "$(dirname "$0")/expect.sh"

if ! command -v mpicc.mpich >/dev/null; then
    echo "SKIP: needs MPICH's compiler wrapper mpicc.mpich (apt-get install mpich libmpich-dev)"
    exit 77
fi
abi_lib=$top_builddir/.libs/libmpi.so.12
if [ ! -e "$abi_lib" ]; then
    echo "SKIP: needs the shared library $abi_lib (configure without --disable-shared)"
    exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The installed layout, from the build tree.
mkdir "$tmp/abi"
ln -s "$abi_lib" "$tmp/abi/libmpi.so.12"
ln -s "$abi_lib" "$tmp/abi/libmpich.so.12"
export LD_LIBRARY_PATH=$tmp/abi:$top_builddir/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

mpich_so=$(ls /usr/lib/*/libmpich.so.12 2>/dev/null | head -1)
if [ -n "$mpich_so" ] && command -v nm >/dev/null; then
    nm -D --defined-only "$mpich_so" | awk '$NF ~ /^P?MPI_/ {print $NF}' | sort -u >"$tmp/mpich"
    # What a program that loads libmpi.so.12 sees: its symbols and libmpishim.so's. The
    # MPI_ names of the functions mpi.h does not declare are only in libmpi.so.12, so that
    # programs built with our mpicc do not link them (tools/gen_abi_stubs.sh).
    nm -D --defined-only "$top_builddir/.libs/libmpishim.so" "$abi_lib" |
        awk 'NF >= 3 {print $NF}' | sort -u >"$tmp/ours"
    expect "every MPI_/PMPI_ symbol of $mpich_so is exported by libmpi.so.12 or libmpishim.so" \
        "" "$(comm -23 "$tmp/mpich" "$tmp/ours" | tr '\n' ' ')"
fi

# A library built with --enable-sanitizers needs programs that carry the sanitizer runtime.
for prog in abi_pingpong abi_unweighted abi_large_count; do
    # shellcheck disable=SC2086 # MPS_SAN_FLAGS is a list of flags
    if ! mpicc.mpich ${MPS_SAN_FLAGS:-} -o "$tmp/$prog" "$top_srcdir/tests/mpich_abi/$prog.c" \
        >"$tmp/$prog.build" 2>&1; then
        cat "$tmp/$prog.build"
        expect "mpicc.mpich builds $prog" built "failed"
        continue
    fi
    needed=$(ldd "$tmp/$prog" | awk '$1 == "libmpich.so.12" || $1 == "libmpi.so.12" {print $3}')
    expect "$prog's MPI library resolves to mpishim's" "$tmp/abi/libmpich.so.12" "$needed"
    shim=$(ldd "$tmp/$prog" | awk '$1 == "libmpishim.so.0" {print $3}')
    expect "$prog loads the build tree's libmpishim.so.0" "$top_builddir/.libs/libmpishim.so.0" \
        "$shim"
    out=$(timeout 60 "$top_builddir/tools/mpiexec" -n 2 "$tmp/$prog" 2>&1)
    rc=$?
    echo "$out" | sed "s/^/    $prog: /"
    want=${prog#abi_}
    expect "$prog runs at 2 ranks and checks its results" "0 $want ok" \
        "$rc $(echo "$out" | grep -o "^$want ok" | head -1)"
done

expect_done
