#!/bin/bash
# test_coll_shm.sh - the flat shared-memory collectives (pg_core/pg_coll_shm.c) are taken:
# tests/mr/mr_coll_shm checks its allreduce, bcast and barrier results on 4 ranks of this
# node, on the world and on more communicators than there are channels, and this script
# checks from the log that the world and the communicators got channels (the 15 for
# communicators reused after they were freed), and that with MPISHIM_COLL_SHM=0 the same
# program passes through messages with no channel given out.
set -uo pipefail

top_builddir=${top_builddir:-$PWD}
# shellcheck source=tests/scripts/expect.sh
. "$(dirname "$0")/expect.sh"

run() {
    mr_logged 4 mr_coll_shm 300
}
channels() {
    grep -c "small collectives through shared memory (channel $1)" <<<"$out"
}

# Runs mr_coll_shm into $out; shows the output's end when it failed.
run_shown() {
    out=$(run)
    rc=$?
    [ "$rc" -eq 0 ] || tail -30 <<<"$out"
}

run_shown
expect "mr_coll_shm, 4 ranks: exit status" 0 "$rc"
expect "every rank's world takes channel 0" 4 "$(channels 0)"
# 24 duplicates of the world, twice: the first 15 of each round get channels 1-15 (the
# second round's once the first's are drained), the other 9 go through messages; then
# the split halves take channel 1 again.
expect "channel 15 given out in both rounds of duplicates, on every rank" 8 "$(channels 15)"
expect "channel 1: both rounds and the split, on every rank" 12 "$(channels 1)"
expect "no communicator beyond the channels gets one" 0 "$(channels 16)"

MPISHIM_COLL_SHM=0 run_shown
expect "mr_coll_shm, 4 ranks, MPISHIM_COLL_SHM=0: exit status" 0 "$rc"
expect "no channel given out" 0 "$(grep -c 'through shared memory' <<<"$out")"
expect_done
