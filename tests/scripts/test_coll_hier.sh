#!/bin/bash
# test_coll_hier.sh - the node-aware collectives (pg_core/pg_coll_hier_*.c) on one machine:
# MPISHIM_NODE_SPLIT=k (a test knob) makes every k local ranks a node, so tests/mr/mr_coll_hier
# runs its allreduce, reduce, bcast, allgather and barrier checks, blocking and
# non-blocking, at 2 nodes x 3 ranks, 2 x 4 and 3 nodes of 2, 2 and 1; this script checks
# from the log that each rank took the hierarchy on the program's three communicators (the
# world, its duplicate and the interleaved split), and that it stays flat where it must:
# MPISHIM_COLL_HIER=0, every rank a node of its own, one node; then pgc's blocking and
# async calls mixed between ranks (mr_pgc_mix) on nodes of 2. MRT_EXPECT_HIER makes the
# program check from the MPI_T counters that every non-blocking call ran node-aware (1) or
# none did (0). The real multi-node runs (srun -N 2) are in test_cluster.sh.
set -uo pipefail

top_builddir=${top_builddir:-$PWD}
# shellcheck source=tests/scripts/expect.sh
. "$(dirname "$0")/expect.sh"

# run RANKS SPLIT HIER: mr_coll_hier into $out, expecting node-aware non-blocking calls
# when HIER is 1; shows the output's end when it failed.
run() {
    out=$(MRT_EXPECT_HIER=$3 MPISHIM_NODE_SPLIT=$2 mr_logged "$1" mr_coll_hier 120)
    rc=$?
    [ "$rc" -eq 0 ] || tail -30 <<<"$out"
}
hier_lines() {
    grep -c "node-aware collectives" <<<"$out"
}

run 6 3 1
expect "2 nodes x 3 ranks: exit status" 0 "$rc"
expect "2 x 3: every rank runs node-aware on the world, the dup and the split" 18 "$(hier_lines)"
run 8 4 1
expect "2 nodes x 4 ranks: exit status" 0 "$rc"
expect "2 x 4: every rank runs node-aware on all three communicators" 24 "$(hier_lines)"
run 5 2 1
expect "nodes of 2, 2 and 1 ranks: exit status" 0 "$rc"
expect "2 + 2 + 1: node-aware on all three communicators" 15 "$(hier_lines)"

MPISHIM_COLL_HIER=0 run 6 3 0
expect "MPISHIM_COLL_HIER=0: exit status" 0 "$rc"
expect "MPISHIM_COLL_HIER=0: flat" 0 "$(hier_lines)"
run 4 1 0
expect "every rank a node of its own: exit status" 0 "$rc"
expect "one rank per node: flat" 0 "$(hier_lines)"
run 4 0 0
expect "one node: exit status" 0 "$rc"
expect "one node: flat" 0 "$(hier_lines)"

# pgc: blocking and async calls mixed between ranks (mr_pgc_mix) meet on the node-aware
# forms too, at 2 nodes x 2 ranks and 3 nodes of 2, 2 and 1 (under sanitizers, several times
# slower on 2 cores, at 2 x 2 only).
mix_ranks="4 5"
[[ "${MPS_SAN_FLAGS:-}" == *sanitize* ]] && mix_ranks=4
for ranks in $mix_ranks; do
    out=$(MPISHIM_NODE_SPLIT=2 mr_logged $ranks mr_pgc_mix 120)
    rc=$?
    [ "$rc" -eq 0 ] || tail -30 <<<"$out"
    expect "mr_pgc_mix, $ranks ranks in nodes of 2: exit status" 0 "$rc"
    expect "mr_pgc_mix, $ranks ranks in nodes of 2: node-aware" $ranks "$(hier_lines)"
done
# Every pgc call on nodes of 2, the empty tensors among them (whose list buffer is NULL:
# the node-aware allgather once took that for a failed allocation).
out=$(MPISHIM_NODE_SPLIT=2 mr_logged 4 mr_pgc 120)
rc=$?
[ "$rc" -eq 0 ] || tail -30 <<<"$out"
expect "mr_pgc, 4 ranks in nodes of 2: exit status" 0 "$rc"
expect_done
