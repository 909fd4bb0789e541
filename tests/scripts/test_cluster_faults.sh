#!/bin/bash
# test_cluster_faults.sh - dead and cut-off ranks across the nodes of the emulated cluster
# (tests/scripts/cluster.sh, started as test_cluster.sh starts it), where a survivor has no
# pid of the dead rank to look at (issue 40):
#   - srun --mpi=pmix -N 2 -n 2 with MPISHIM_TIMEOUT=120: rank 1 (cn2) is SIGKILLed inside a
#     4 MiB MPI_Allreduce while rank 0 (cn1) enters it. Slurm 22.05's PMIx plugin sends no
#     termination event and ofi_rxm reports nothing, so rank 0 learns it from its probes of
#     rank 1's tcp;ofi_rxm endpoint (fabric/fab_probe.c: refused once the process is gone);
#     its message names MPI_Allreduce, rank 1 and cn2, and its fatal error (PMIx_Abort) ends
#     the step non-zero, well within the timeout. Slurm's PMIx plugin also kills the step
#     when its server loses the dead client's connection ("_errhandler: ... status = -61"),
#     and sometimes first (then rank 0 dies by SIGKILL without a message of its own): the
#     step must end non-zero within 30 s, whoever ends it, and the line printed says who;
#   - the same death under a torch-style env:// start, rank 0 on cn1 and rank 1 on cn2:
#     rank 0 learns it from the store (the dead rank's connection closed) or from its probe,
#     whichever looks first, and names it; no segment of the dead rank is left in cn2's
#     /dev/shm;
#   - the same under a file:// start (a rendezvous file both nodes see): no launcher and no
#     store server watch the ranks there, so only the probe can tell (without it rank 0
#     waits out the timeout): the case that proves the probe across nodes;
#   - a file:// start of 4 ranks where rank 1 dies before rank 2 ever exchanged a message with
#     it and its first address is on a network no route leads to (per-node private networks
#     listed first): rank 2's probe moves on to its next address and finds it refused;
#   - srun -N 2 -n 2 with MPISHIM_TIMEOUT=10: cn2's link goes down in the middle of a loop
#     of allreduces; the ranks give up within the timeout with an error (a probe that gets no
#     answer says nothing: a node cut off is not a dead process), the link comes back up 20 s
#     after the cut so that Slurm's own messages pass again, and the step ends non-zero
#     instead of hanging;
# and `cluster.sh down` still takes everything down (no namespace of the cluster is left).
# Times are printed (the goal is 2 s after a death; measured here 2026-11-26: see
# doc/failures.md); only generous bounds are asserted (srun 30 s, file:// 20 s, env:// 10 s).
# Skips (exit 77) where the cluster cannot run (no root, no namespaces, no Slurm).
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top_builddir=${top_builddir:-$PWD}
cluster=$here/cluster.sh
prog=tests/scripts/kill_victim
tmp=$(mktemp -d)
failures=0

cleanup() {
    local p
    for p in $(jobs -p); do kill "$p" 2>/dev/null; done
    ip link set vmpsc2 up 2>/dev/null
    "$cluster" down >/dev/null 2>&1
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# The suite's loopback choice (Makefile.am) is for one-node tests; the nodes choose their own.
unset PMIX_RANK PMIX_NAMESPACE RANK WORLD_SIZE MASTER_ADDR MASTER_PORT MPISHIM_BOOT_METHOD \
    MPISHIM_FABRIC_IFACE \
    SLURM_JOB_ID SLURM_JOBID SLURM_NODELIST SLURM_NTASKS MPISHIM_TIMEOUT

[ -x "$top_builddir/$prog" ] || { echo "test_cluster_faults.sh: $prog is not built"; exit 99; }

# One suite at a time on this machine: the cluster's bridge, ports and folder are shared.
exec 9>"${MPISHIM_CLUSTER_DIR:-/tmp/mpishim-cluster}.lock"
flock -w 600 9 || { echo "test_cluster_faults.sh: another suite held the lock for 600 s"; exit 99; }

conf=$("$cluster" up 2>"$tmp/up.err" | tail -n 1)
rc=${PIPESTATUS[0]}
if [ "$rc" = 77 ] || grep -q '^SKIP' <<<"$conf"; then
    echo "$conf"
    exit 77
fi
if [ "$rc" != 0 ]; then
    echo "FAIL - cluster.sh up (exit $rc)"
    cat "$tmp/up.err"
    exit 1
fi
export SLURM_CONF=$conf
cd "$top_builddir" || exit 99

ok() { echo "ok   - $1"; }
not_ok() {
    echo "FAIL - $1"
    [ -f "$2" ] && tail -n 30 "$2" | sed 's/^/       /'
    failures=$((failures + 1))
}
now_ms() { echo $(($(date +%s%N) / 1000000)); }
# Seconds from the victim's death (its "dies ... at MS ms" line in $1) to $2 (ms).
since_death() {
    local died
    died=$(sed -n 's/^.*victim: rank 1 dies .* at \([0-9]*\) ms$/\1/p' "$1" | head -1)
    [ -n "$died" ] || { echo "?"; return; }
    printf '%d.%02d' $((($2 - died) / 1000)) $((($2 - died) % 1000 / 10))
}

# srun -N 2 -n 2: rank 1 on cn2 SIGKILLed in MPI_Allreduce. The step must end non-zero long
# before MPISHIM_TIMEOUT (120 s; 30 s asserted). Who ends it races: rank 0's probe (its
# message names the call and rank 1, and its abort ends the step) or Slurm, whose PMIx
# plugin kills the step when it loses the dead client (seen both ways here, the probe in 3
# of 4 runs); the line printed says which.
srun_kill() {
    local rc t
    MPISHIM_TIMEOUT=120 timeout -k 5 100 srun --mpi=pmix -N 2 -n 2 "$prog" allreduce_large \
        kill </dev/null >"$tmp/out" 2>&1
    rc=$?
    t=$(since_death "$tmp/out" "$(now_ms)")
    if ! grep -q 'victim: rank 1 dies' "$tmp/out"; then
        not_ok "srun -N 2: rank 1 on cn2 never reached its death" "$tmp/out"
    elif [ $rc = 0 ] || [ $rc = 124 ] || [ "${t%%.*}" = "?" ] || [ "${t%%.*}" -ge 30 ]; then
        not_ok "srun -N 2: rank 1 killed on cn2 in MPI_Allreduce: the step ends non-zero within \
30 s (exit $rc, $t s)" "$tmp/out"
    elif grep -q 'MPI_Allreduce (rank 0): rank 1 (on node cn2) is gone' "$tmp/out"; then
        ok "srun -N 2: rank 1 killed on cn2 in MPI_Allreduce: rank 0 names it, the step ends \
(exit $rc) $t s after the death"
    else
        ok "srun -N 2: rank 1 killed on cn2 in MPI_Allreduce: srun ended the step first (exit \
$rc) $t s after the death"
    fi
}

env_kill() {
    local addr rc0 t common
    # The store's message or the probe's, whichever looked first.
    local died_or_gone='MPI_Allreduce \(rank 0\): rank 1 \((pid [0-9]* on host cn2\) has died|'
    died_or_gone+='on node cn2\) is gone)'
    addr=$("$cluster" addr cn1)
    common="WORLD_SIZE=2 MASTER_ADDR=$addr MASTER_PORT=29519"
    # In a subshell, so that bash reports no "Killed" job: the victim's death is expected.
    ("$cluster" exec cn2 env RANK=1 $common timeout 60 "$prog" allreduce_large kill \
        >"$tmp/env.1" 2>&1) &
    local p1=$!
    "$cluster" exec cn1 env RANK=0 $common timeout 60 "$prog" allreduce_large kill \
        >"$tmp/env.0" 2>&1
    rc0=$?
    local end
    end=$(now_ms)
    wait "$p1" 2>/dev/null
    cat "$tmp/env.0" "$tmp/env.1" >"$tmp/out"
    t=$(since_death "$tmp/out" "$end")
    local pid1 left=""
    pid1=$(sed -n 's/^pid 1 \([0-9]*\)$/\1/p' "$tmp/env.1")
    [ -n "$pid1" ] && left=$("$cluster" exec cn2 sh -c "ls /dev/shm/mpishim-$pid1-* 2>/dev/null")
    if [ $rc0 = 0 ] || [ $rc0 = 124 ] || [ $rc0 = 137 ]; then
        not_ok "env:// across nodes: rank 0 ends when rank 1 dies on cn2 (exit $rc0)" "$tmp/out"
    elif ! grep -Eq "$died_or_gone" "$tmp/env.0"; then
        not_ok "env:// across nodes: rank 0's message names rank 1 on cn2" "$tmp/out"
    elif [ "${t%%.*}" != "?" ] && [ "${t%%.*}" -ge 10 ]; then
        not_ok "env:// across nodes: rank 0 ended $t s after the death (limit 10 s)" "$tmp/out"
    elif [ -n "$left" ]; then
        not_ok "env:// across nodes: segments of the dead rank left on cn2: $left" "$tmp/out"
    else
        ok "env:// across nodes: rank 0 (cn1) names rank 1 (cn2), dead, $t s after (exit $rc0)"
    fi
}

# file:// across nodes: the ranks meet in a file both nodes see, and no store server watches
# them, so rank 0 (cn1) can learn of rank 1's death (cn2) from its probe only.
file_kill() {
    local rc0 t end url
    url=file://$tmp/rendezvous
    ("$cluster" exec cn2 env RANK=1 WORLD_SIZE=2 MPISHIM_BOOT_METHOD="$url" timeout 60 \
        "$prog" allreduce_large kill >"$tmp/file.1" 2>&1) &
    local p1=$!
    "$cluster" exec cn1 env RANK=0 WORLD_SIZE=2 MPISHIM_BOOT_METHOD="$url" timeout 60 \
        "$prog" allreduce_large kill >"$tmp/file.0" 2>&1
    rc0=$?
    end=$(now_ms)
    wait "$p1" 2>/dev/null
    cat "$tmp/file.0" "$tmp/file.1" >"$tmp/out"
    t=$(since_death "$tmp/out" "$end")
    if [ $rc0 = 0 ] || [ $rc0 = 124 ] || [ $rc0 = 137 ]; then
        not_ok "file:// across nodes: rank 0 ends when rank 1 dies on cn2 (exit $rc0)" "$tmp/out"
    elif ! grep -q 'MPI_Allreduce (rank 0): rank 1 (on node cn2) is gone' "$tmp/file.0"; then
        not_ok "file:// across nodes: rank 0's message names rank 1 on cn2" "$tmp/out"
    elif [ "${t%%.*}" = "?" ] || [ "${t%%.*}" -ge 20 ]; then
        not_ok "file:// across nodes: rank 0 ended $t s after the death (limit 20 s)" "$tmp/out"
    else
        ok "file:// across nodes: rank 0 (cn1) names rank 1 (cn2), gone, $t s after (exit $rc0)"
    fi
}

# A file:// start of 4 ranks (0 and 2 on cn1, 1 and 3 on cn2) with per-node private
# networks carved from one pool listed first on every node (`cluster.sh decoy apart`:
# dock0 = 172.31.<node>.1/16): rank 1 dies right after MPI_Init while rank 2 waits in a
# receive from it and the others sleep (kill_victim's first_recv). No message went between
# ranks 2 and 1, so rank 2 has no connection to rank 1 that could end, and its probe begins
# at the first of rank 1's addresses, on dock0, where nothing answers. The probe must move
# on to the next address (the log says so), find it refused, and call rank 1 dead; before,
# it watched the silent address until the timeout (60 s here).
file_kill_unrouted() {
    local rc2 t end url r
    if ! "$cluster" decoy apart >"$tmp/out" 2>&1; then
        not_ok "cluster.sh decoy apart" "$tmp/out"
        return
    fi
    url=file://$tmp/rendezvous-unrouted
    for r in 0 1 3; do
        ("$cluster" exec "cn$((r % 2 + 1))" env RANK=$r WORLD_SIZE=4 \
            MPISHIM_BOOT_METHOD="$url" timeout 60 "$prog" first_recv kill \
            >"$tmp/unrouted.$r" 2>&1) &
    done
    "$cluster" exec cn1 env RANK=2 WORLD_SIZE=4 MPISHIM_BOOT_METHOD="$url" \
        MPISHIM_LOG_LEVEL=info timeout 60 "$prog" first_recv kill >"$tmp/unrouted.2" 2>&1
    rc2=$?
    end=$(now_ms)
    wait
    "$cluster" decoy off >/dev/null 2>&1 || not_ok "cluster.sh decoy off"
    cat "$tmp"/unrouted.[0-3] >"$tmp/out"
    t=$(since_death "$tmp/out" "$end")
    if [ $rc2 = 0 ] || [ $rc2 = 124 ] || [ $rc2 = 137 ]; then
        not_ok "file:// across nodes, first address unrouted: rank 2 ends when rank 1 dies on \
cn2, never connected to (exit $rc2)" "$tmp/out"
    elif ! grep -q 'rank 1 not reached at 172\.31\.2\.1 .*; trying ' "$tmp/unrouted.2"; then
        not_ok "file:// across nodes, first address unrouted: the probe moved to rank 1's next \
address" "$tmp/out"
    elif ! grep -q 'MPI_Recv (rank 2): rank 1 (on node cn2) is gone' "$tmp/unrouted.2"; then
        not_ok "file:// across nodes, first address unrouted: rank 2's message names rank 1 on \
cn2" "$tmp/out"
    elif [ "${t%%.*}" = "?" ] || [ "${t%%.*}" -ge 20 ]; then
        not_ok "file:// across nodes, first address unrouted: rank 2 ended $t s after the death \
(limit 20 s)" "$tmp/out"
    else
        ok "file:// across nodes, first address unrouted: rank 2 (cn1) names rank 1 (cn2), never \
connected to, gone, $t s after (exit $rc2)"
    fi
}

link_down() {
    local rc p cut end
    MPISHIM_TIMEOUT=10 timeout -k 5 120 srun --mpi=pmix -N 2 -n 2 "$prog" loop none </dev/null \
        >"$tmp/out" 2>&1 &
    p=$!
    for _ in $(seq 1 300); do
        grep -q '^looping' "$tmp/out" && break
        sleep 0.1
    done
    cut=$(now_ms)
    ip link set vmpsc2 down
    (sleep 20 && ip link set vmpsc2 up) &
    wait "$p"
    rc=$?
    end=$(now_ms)
    wait
    local t
    t=$(printf '%d.%02d' $(((end - cut) / 1000)) $(((end - cut) % 1000 / 10)))
    if ! grep -q '^looping' "$tmp/out"; then
        not_ok "cn2's link down mid-collective: the loop never started" "$tmp/out"
    elif [ $rc = 0 ] || [ $rc = 124 ] || [ $rc = 137 ]; then
        not_ok "cn2's link down mid-collective: the step ends non-zero (exit $rc, $t s)" "$tmp/out"
    elif ! grep -Eq 'MPI_Allreduce \(rank [01]\): .*(timed out after 10 s|within 10 s|died|unreachable|reach)' "$tmp/out"; then
        not_ok "cn2's link down mid-collective: an error from MPI_Allreduce" "$tmp/out"
    else
        ok "cn2's link down mid-collective: MPI_Allreduce fails, the step ends (exit $rc) $t s after the cut"
    fi
}

srun_kill
env_kill
file_kill
file_kill_unrouted
link_down
if "$cluster" down >"$tmp/down" 2>&1 && ! grep -q '^mpsc' <<<"$(ip netns list)"; then
    ok "cluster.sh down takes everything down after the faults"
else
    not_ok "cluster.sh down after the faults" "$tmp/down"
fi
echo "$failures failed"
[ $failures = 0 ]
