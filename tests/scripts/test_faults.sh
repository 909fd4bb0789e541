#!/bin/bash
# test_faults.sh - faults end the job with a message that names the call, the rank and the
# cause, within MPISHIM_TIMEOUT; never a hang and never a silent success.
# Runs tests/mr/mr_fatal in each mode under the build tree's mpiexec, and checks that
# MPISHIM_FABRIC_IFACE is obeyed (a wrong name fails, lo is the interface used).
set -uo pipefail

top_builddir=${top_builddir:-$PWD}
prog=$top_builddir/tests/mr/mr_fatal
mpiexec=$top_builddir/tools/mpiexec
pass=0 fail=0
out=$(mktemp)
trap 'rm -f "$out"' EXIT

# expect NAME SECONDS PATTERN command...: the command must fail within SECONDS and print a
# line matching PATTERN (an extended regex).
expect() {
    local name=$1 limit=$2 pattern=$3
    shift 3
    local start=$SECONDS rc
    timeout $((limit + 30)) "$@" >"$out" 2>&1
    rc=$?
    if [ $rc -eq 0 ]; then
        echo "FAIL $name: exited 0"; fail=$((fail + 1))
    elif [ $rc -eq 124 ]; then
        echo "FAIL $name: hung (killed after $((limit + 30)) s)"; fail=$((fail + 1))
    elif [ $((SECONDS - start)) -gt "$limit" ]; then
        echo "FAIL $name: took $((SECONDS - start)) s (limit $limit)"; fail=$((fail + 1))
    elif ! grep -Eq "$pattern" "$out"; then
        echo "FAIL $name: no line matching '$pattern' in:"; sed 's/^/    /' "$out"
        fail=$((fail + 1))
    else
        echo "PASS $name (exit $rc, $((SECONDS - start)) s)"; pass=$((pass + 1))
    fi
}

export MPISHIM_TIMEOUT=5
expect preinit 10 'MPI_Send \(rank 0\): called before MPI_Init' "$prog" preinit
expect postfinalize 10 'MPI_Barrier \(rank 0\): called after MPI_Finalize' "$prog" postfinalize
expect badrank 20 'MPI_Send \(rank [0-9]\): rank [0-9]+ is not in the communicator \(size 2\)' \
    "$mpiexec" -n 2 "$prog" badrank
expect truncate 20 'MPI_Recv \(rank 1\): message from rank 0 with tag 0 is longer' \
    "$mpiexec" -n 2 "$prog" truncate
expect killed 20 'rank 1 .*(signal 9|SIGKILL|killed)' "$mpiexec" -n 2 "$prog" killed
# A peer that never sends: the receive gives up after MPISHIM_TIMEOUT (5 s) on its own.
expect hang 25 'MPI_Recv \(rank 0\): no message from source 1 with tag 0 arrived within 5 s' \
    "$mpiexec" -n 2 "$prog" hang
# The same for a collective, which names the rank it waited for, and counts that differ
# between ranks (within one node both go through shared memory, pg_coll_shm.c).
expect collhang 25 'MPI_Barrier \(rank 0\): barrier: timed out after 5 s waiting for rank 1 \(' \
    "$mpiexec" -n 2 "$prog" collhang
# MPI_Finalize's barrier gives up the same way, and its error names the rank that called it.
expect finalhang 25 'MPI_Finalize \(rank 1\): .*timed out after 5 s waiting for rank 0' \
    "$mpiexec" -n 2 "$prog" finalhang
expect collmismatch 20 'MPI_Allreduce \(rank [01]\): .*rank [01] gave [48] bytes, this rank [48]' \
    "$mpiexec" -n 2 "$prog" collmismatch
# Without a launcher to end the job (a torch-style env:// start: two processes a shell
# started), a survivor waiting for a dead rank of its node gives up within about a second
# and names it, although MPISHIM_TIMEOUT is 60 s: in a receive, in an allreduce, and in the
# wait of a cancelled send, which would otherwise wait for the dead rank's answer.
two_env() {
    local port
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    env MPISHIM_TIMEOUT=60 RANK=1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT="$port" \
        "$prog" "$1" &
    env MPISHIM_TIMEOUT=60 RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT="$port" \
        "$prog" "$1"
}
export -f two_env
export prog
for mode in killed killedcoll killedcancel; do
    expect "$mode (env://, no launcher)" 10 'rank 1 \(pid [0-9]+, on this node\) has died' \
        bash -c "two_env $mode"
done
# A rendezvous that nobody serves: env:// pointing at a closed port.
expect unreachable 25 '(unreachable|could not connect|connect).*127\.0\.0\.1' \
    env RANK=1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=1 MPISHIM_BOOT_STORE_EXTERNAL=1 \
    "$prog" none
# PMIx variables without a PMIx server: an error, not a silent singleton.
expect nopmix 25 '[Pp][Mm][Ii]x' env PMIX_NAMESPACE=ghost PMIX_RANK=0 \
    "PMIX_SERVER_URI41=pmix-server.1234;tcp4://127.0.0.1:1" "$prog" none
# A network interface this node does not have: MPI_Init fails and names it, where libfabric
# alone would quietly use every interface.
expect badiface 25 'MPI_Init \(rank [01]\): .*MPISHIM_FABRIC_IFACE=nosuch0: this node has no such' \
    env MPISHIM_FABRIC_IFACE=nosuch0 "MPISHIM_FABRIC_PROVIDER=tcp;ofi_rxm" \
    "$mpiexec" -n 2 "$prog" none
# And one it has is the one used: over lo, each rank publishes 127.0.0.1 (the host's address
# otherwise) and mr_p2p's exchanges pass.
for prov in "tcp;ofi_rxm" net; do
    if [ "$prov" = net ] && [[ "${MPS_SAN_FLAGS:-}" == *address* ]]; then
        echo "SKIP iface lo over net: libfabric's net leaks its fi_info copies (tests/mr.list);" \
            "needs a build without LeakSanitizer"
        continue
    fi
    MPISHIM_LOG_LEVEL=debug MPISHIM_FABRIC_IFACE=lo MPISHIM_FABRIC_PROVIDER="$prov" \
        timeout 120 "$mpiexec" -n 2 "$top_builddir/tests/mr/mr_p2p" >"$out" 2>&1
    rc=$?
    n=$(grep -c "fab_get_addr: $prov address of [0-9]* B: fi_sockaddr_in://127\.0\.0\.1:" "$out")
    if [ $rc -eq 0 ] && [ "$n" = 2 ]; then
        echo "PASS iface lo over $prov"; pass=$((pass + 1))
    else
        echo "FAIL iface lo over $prov: exit $rc, $n of 2 ranks on 127.0.0.1:"
        grep -E "fab_get_addr|error|passed" "$out" | sed 's/^/    /'
        fail=$((fail + 1))
    fi
done

# The same dead rank under srun, when the test Slurm is up (tests/scripts/mr_srun.sh starts
# it): Slurm's PMIx plugin sees the task die and cancels the step.
conf=${SLURM_CONF:-/tmp/mpishim-slurm/slurm.conf}
if command -v srun >/dev/null && [ -f "$conf" ] && SLURM_CONF=$conf timeout 10 sinfo -h >/dev/null 2>&1; then
    SLURM_CONF=$conf expect "killed (srun)" 40 '(task 1|CANCELLED|Killed)' \
        srun --mpi=pmix -n 2 "$prog" killed
else
    echo "SKIP killed (srun): needs a running Slurm (tests/scripts/slurm_cluster.sh up)"
fi

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
