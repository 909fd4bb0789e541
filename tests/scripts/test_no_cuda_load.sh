#!/bin/bash
# test_no_cuda_load.sh - one build runs with or without CUDA (issue 41): libmpishim opens the
# CUDA runtime and NCCL at run time (pg_core/pg_device.c), so
#  1. the library (in a static-only build, a program) needs no CUDA or NCCL library
#     (readelf -d and ldd name none);
#  2. with the CUDA libraries hidden from the loader (LD_LIBRARY_PATH an empty folder,
#     MPISHIM_CUDA_LIB and MPISHIM_NCCL_LIB naming files that do not exist) the suite's CPU
#     programs run and print the right results: examples hello, ring and pgc_all_reduce on
#     2 ranks, and mpishim_info, which says the runtime and NCCL were not loaded and why;
#     the loader's trace (LD_DEBUG=files) shows no CUDA library initialised;
#  3. the same without the variables in a mount namespace (unshare -m; this script again
#     with --in-namespace DIR...) where every folder holding libcudart or libnccl
#     (ldconfig's and configure's) is covered by an empty tmpfs, as on a node without CUDA.
#     Needs root and unshare: skipped with a line saying so otherwise.
# In a CUDA build a control run first checks that mpishim_info does load the runtime when
# nothing is hidden, so that the trace check can see a load when there is one.
set -uo pipefail

top_builddir=${top_builddir:-$PWD}
in_namespace=no
if [ "${1:-}" = --in-namespace ]; then
    in_namespace=yes
    shift
fi
# shellcheck source=tests/scripts/expect.sh
. "$(dirname "$0")/expect.sh"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/empty"
mpiexec=$top_builddir/tools/mpiexec
info=$top_builddir/tools/mpishim_info
cuda_build=no
grep -q '^#define HAVE_CUDA 1' "$top_builddir/config.h" && cuda_build=yes
nccl_build=no
grep -q '^#define HAVE_NCCL 1' "$top_builddir/config.h" && nccl_build=yes
cuda_libs='libcudart|libnccl|libcuda\.|libcublas|libnvidia'

# The real executable behind a libtool wrapper script (what ldd must read).
real_binary() {
    local dir base
    dir=$(dirname "$1")
    base=$(basename "$1")
    for f in "$dir/.libs/$base" "$dir/.libs/lt-$base" "$1"; do
        if [ -f "$f" ] && head -c 4 "$f" | grep -q ELF; then
            echo "$f"
            return
        fi
    done
    echo "$1"
}

# Libraries initialised by the loader during a run (LD_DEBUG=files), CUDA's only.
cuda_inits() {
    grep -E "calling init: .*($cuda_libs)" "$1" | sed 's/.*calling init: //' | sort -u
}

# The CPU programs under the current environment; NAME prefixes each check.
run_cpu_programs() {
    local name=$1 out
    out=$(timeout 60 "$mpiexec" -n 2 "$top_builddir/examples/hello" 2>&1)
    expect "$name: hello, 2 ranks: exit status" 0 "$?"
    expect "$name: hello prints both ranks" \
        "Hello from rank 0 of 2|Hello from rank 1 of 2" \
        "$(grep -o 'Hello from rank [0-9] of [0-9]' <<<"$out" | sort | paste -sd'|')"
    out=$(timeout 60 "$mpiexec" -n 2 "$top_builddir/examples/ring" 2>&1)
    expect "$name: ring, 2 ranks: exit status" 0 "$?"
    # 10 passed around: rank 0 decrements it 10 times, to 0, then both ranks exit.
    expect "$name: ring counts down to 0" 10 "$(grep -c 'Process 0 decremented value' <<<"$out")"
    expect "$name: ring's last value" "Process 0 decremented value: 0" \
        "$(grep 'Process 0 decremented value' <<<"$out" | tail -1)"
    expect "$name: ring, both ranks exit" 2 "$(grep -c 'Process [01] exiting' <<<"$out")"
    out=$(timeout 60 "$mpiexec" -n 2 "$top_builddir/examples/pgc_all_reduce" 2>&1)
    expect "$name: pgc_all_reduce, 2 ranks: exit status" 0 "$?"
    # Rank r holds [1 + 2r, 2 + 2r]: the sum over ranks 0 and 1 is [1+3, 2+4].
    expect "$name: pgc_all_reduce sums [1, 2] and [3, 4] on both ranks" \
        "tensor([4, 6]) # Rank 0|tensor([4, 6]) # Rank 1" \
        "$(grep -F 'tensor([4, 6])' <<<"$out" | sort | paste -sd'|')"
}

# mpishim_info's device section, checked for the hidden runtime; WHY: a word of the reason.
check_info_hidden() {
    local name=$1 why=$2 out rc
    out=$(LD_DEBUG=files timeout 60 "$info" 2>"$tmp/info.trace")
    rc=$?
    expect "$name: mpishim_info exit status" 0 "$rc"
    expect "$name: mpishim_info, usable now" "no" \
        "$(sed -n 's/^  usable now: *\(no\|yes\).*/\1/p' <<<"$out")"
    if [ $cuda_build = yes ]; then
        expect "$name: mpishim_info says the CUDA runtime was not loaded, naming $why" 1 \
            "$(grep '^  CUDA runtime: *not loaded' <<<"$out" | grep -c -F "$why")"
    else
        expect "$name: mpishim_info says CUDA is not compiled in" 1 \
            "$(grep -c '^  compiled in: *no (built without CUDA)' <<<"$out")"
    fi
    if [ $nccl_build = yes ]; then
        expect "$name: mpishim_info says NCCL was not loaded" 1 \
            "$(grep -c '^  NCCL: *not loaded' <<<"$out")"
    fi
    expect "$name: no CUDA or NCCL library initialised in mpishim_info" "" \
        "$(cuda_inits "$tmp/info.trace")"
}

if [ $in_namespace = no ]; then
    # ---- 1. What the library needs (once, outside the namespace of part 3).
    lib=$top_builddir/.libs/libmpishim.so
    if [ -f "$lib" ]; then
        target=$lib
    else
        target=$(real_binary "$top_builddir/examples/hello") # a static-only build
    fi
    expect "$(basename "$target") has no DT_NEEDED on a CUDA or NCCL library" "" \
        "$(readelf -d "$target" | grep NEEDED | grep -E "$cuda_libs")"
    expect "ldd $(basename "$target") names no CUDA or NCCL library" "" \
        "$(ldd "$target" | grep -E "$cuda_libs")"
    echo "note: built with CUDA: $cuda_build, NCCL: $nccl_build"

    # ---- Control: nothing hidden, the CUDA build does load the runtime (so the trace check
    # below can see a load when there is one).
    if [ $cuda_build = yes ]; then
        LD_DEBUG=files timeout 60 "$info" >"$tmp/control.out" 2>"$tmp/control.trace"
        expect "control: mpishim_info exit status" 0 "$?"
        expect "control: the CUDA runtime is loaded when nothing is hidden" 1 \
            "$(cuda_inits "$tmp/control.trace" | grep -c libcudart)"
    fi

    # ---- 2. Hidden by the environment (restored afterwards).
    saved_ld_path=${LD_LIBRARY_PATH-}
    export LD_LIBRARY_PATH=$tmp/empty
    export MPISHIM_CUDA_LIB=/nonexistent/libcudart.so
    export MPISHIM_NCCL_LIB=/nonexistent/libnccl.so
    run_cpu_programs "hidden by environment"
    check_info_hidden "hidden by environment" "MPISHIM_CUDA_LIB=/nonexistent/libcudart.so"
    unset MPISHIM_CUDA_LIB MPISHIM_NCCL_LIB
    if [ -n "$saved_ld_path" ]; then
        export LD_LIBRARY_PATH=$saved_ld_path
    else
        unset LD_LIBRARY_PATH
    fi
fi

# ---- 3. Hidden by the file system, in a mount namespace of our own: this script again,
# with --in-namespace DIR..., covers each DIR with an empty tmpfs and runs the checks there.
hide_dirs() {
    {
        ldconfig -p 2>/dev/null | grep -E 'libcudart|libnccl' | sed 's/.*=> //'
        sed -n 's/^#define MPS_\(CUDA\|NCCL\)_LIBDIR "\(.*\)"/\2\/x/p' "$top_builddir/config.h"
    } | while read -r f; do
        d=$(dirname "$f")
        [ -d "$d" ] && readlink -f "$d"
    done | sort -u
}

if [ "$in_namespace" = yes ]; then
    for d in "$@"; do
        mount -t tmpfs -o size=1m mpishim-no-cuda "$d"
        expect "an empty tmpfs covers $d" 0 "$?"
    done
    expect "no libcudart or libnccl left where the loader or configure would look" "" \
        "$(for d in "$@"; do ls "$d"; done | grep -E 'libcudart|libnccl')"
    run_cpu_programs "hidden by mounts"
    check_info_hidden "hidden by mounts" "cannot open shared object file"
elif [ "$(id -u)" != 0 ] || ! command -v unshare >/dev/null; then
    echo "SKIP: the mount-namespace half needs root and unshare (util-linux)"
elif ! unshare -m true 2>/dev/null; then
    echo "SKIP: the mount-namespace half: unshare -m is not permitted here"
else
    mapfile -t dirs < <(hide_dirs)
    echo "note: hiding with empty tmpfs mounts: ${dirs[*]:-(no CUDA folder found: nothing to hide)}"
    # Its own failures are counted and printed there; here it counts as one.
    top_builddir=$top_builddir unshare -m bash "$0" --in-namespace "${dirs[@]}" ||
        failures=$((failures + 1))
fi
expect_done
