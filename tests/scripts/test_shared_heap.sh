#!/bin/bash
# test_shared_heap.sh - large messages between ranks of one node: with the shared heap
# (fabric/fab_heap.h) each rank maps its peer's heap and copies malloc'd buffers with
# memcpy; with MPISHIM_HEAP=0 no heap starts and CMA carries them. tests/mr/mr_p2p checks
# every byte of its large transfers (4 MB to 36 KB, one way and both ways) either way.
set -uo pipefail

top_builddir=${top_builddir:-$PWD}
# shellcheck source=tests/scripts/expect.sh
. "$(dirname "$0")/expect.sh"

run() {
    mr_logged 2 mr_p2p 120
}

out=$(run)
rc=$?
if grep -q "single copy (CMA) off" <<<"$out"; then
    echo "SKIP: this machine refuses CMA (process_vm_readv), which the shared heap's mapping"
    echo "      needs too (same ptrace permission): large messages go through libfabric here"
    exit 77
fi
if grep -q "shared heap off: another allocator serves malloc" <<<"$out"; then
    echo "SKIP: another allocator serves malloc in the ranks (LD_PRELOAD or a sanitizer), so"
    echo "      the shared heap stays off by design (test_alloc_preload.sh covers that case)"
    expect "mr_p2p, 2 ranks, heap off by allocator: exit status" 0 "$rc"
    expect_done || exit 1
    exit 77
fi
expect "mr_p2p, 2 ranks, heap on: exit status" 0 "$rc"
expect "both ranks start a heap" 2 "$(grep -c 'info: shared heap: blocks of 65536 B' <<<"$out")"
expect "rank 1 maps rank 0's heap" 1 \
    "$(grep -c "rank 1\] info: rank 0's shared heap mapped" <<<"$out")"
expect "rank 0 maps rank 1's heap (it writes its half of shared copies)" 1 \
    "$(grep -c "rank 0\] info: rank 1's shared heap mapped" <<<"$out")"

out=$(MPISHIM_HEAP=0 run)
rc=$?
expect "mr_p2p, 2 ranks, MPISHIM_HEAP=0: exit status" 0 "$rc"
expect "no heap starts or is mapped" 0 "$(grep -c 'shared heap' <<<"$out")"
expect_done
