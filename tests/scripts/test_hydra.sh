#!/bin/bash
# test_hydra.sh - our programs under MPICH's hydra (mpiexec.mpich), which serves the simple
# PMI-1 wire protocol on PMI_FD (pmix_boot/boot_pmi1.c, issue 39):
#   - tests/mr/mr_p2p at 1, 2 and 4 ranks and tests/mr/mr_pgc (the pgc_ API and its default
#     store) at 2 and 4 pass, and their ranks say they booted by pmi1;
#   - MPI_Abort in one rank (early_exit abort) ends the job with a non-zero status and leaves
#     no process and no /dev/shm/mpishim-PID-* file of any rank;
#   - a rank that exits 0 without MPI_Finalize (early_exit exit0) while the others wait, with
#     a small MPISHIM_TIMEOUT, ends the job with a non-zero status and a line naming rank 1;
#   - hydra's -pmi-port mode (PMI_PORT and PMI_ID instead of PMI_FD) runs mr_p2p at 2 ranks.
# The ranks' pids are written by a wrapper that then execs the program: hydra may drop what
# the ranks print once it kills the job.
# Skips (exit 77) with a line saying so where mpiexec.mpich is not installed.
set -uo pipefail

B=${top_builddir:-$PWD}
HYDRA=$(command -v mpiexec.mpich) || {
    echo "SKIP: test_hydra.sh needs MPICH's hydra, mpiexec.mpich (Debian package mpich)"
    exit 77
}
for p in tests/mr/mr_p2p tests/mr/mr_pgc tests/scripts/early_exit; do
    [ -x "$B/$p" ] || { echo "test_hydra.sh: $B/$p is not built"; exit 99; }
done
tmp=$(mktemp -d /tmp/test_hydra.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
failures=0

# Another launcher's variables must not decide the method.
unset PMIX_RANK PMIX_NAMESPACE RANK WORLD_SIZE MASTER_ADDR MASTER_PORT MPISHIM_BOOT_METHOD \
    MPISHIM_BOOT_STORE_EXTERNAL PMI_FD PMI_PORT PMI_ID PMI_RANK PMI_SIZE
export MPISHIM_TIMEOUT=${MPISHIM_TIMEOUT:-60}

ok() { echo "ok   - $1"; }
not_ok() {
    echo "FAIL - $1"
    [ -f "$2" ] && tail -n 30 "$2" | sed 's/^/       /'
    failures=$((failures + 1))
}

# run NAME N [HYDRA OPTIONS --] PROG ARGS...: must exit 0, every rank booting by pmi1.
run() {
    local name=$1 n=$2 opts=() rc got
    shift 2
    if [ "$1" = -pmi-port ]; then
        opts=("$1")
        shift
    fi
    MPISHIM_LOG_LEVEL=info timeout -k 5 60 "$HYDRA" "${opts[@]}" -n "$n" "$@" </dev/null \
        >"$tmp/out" 2>&1
    rc=$?
    got=$(grep -c "bootstrap: method pmi1, rank [0-9]* of $n," "$tmp/out")
    if [ $rc != 0 ]; then
        not_ok "mpiexec.mpich ${opts[*]} -n $n $name (exit $rc)" "$tmp/out"
    elif [ "$got" != "$n" ]; then
        not_ok "mpiexec.mpich ${opts[*]} -n $n $name: $got of $n ranks booted by pmi1" "$tmp/out"
    else
        ok "mpiexec.mpich ${opts[*]} -n $n $name"
    fi
}

# Whether pid runs (a zombie does not: hydra's SIGKILLed ranks may wait a moment for
# their reaper after mpiexec.mpich has exited).
running() {
    local st
    st=$(ps -o stat= -p "$1" 2>/dev/null) || return 1
    [ "${st#Z}" = "$st" ]
}

# Every pid the ranks printed ("pid RANK PID") is gone within 5 s and has no segment left.
nothing_left() {
    local p i left=""
    for p in $(sed -n 's/^pid [0-9]* \([0-9]*\)$/\1/p' "$1"); do
        for i in $(seq 50); do running "$p" && sleep 0.1; done
        running "$p" && left="$left process $p;"
        for f in /dev/shm/mpishim-"$p"-*; do
            [ -e "$f" ] && left="$left $f;" && rm -f "$f"
        done
    done
    echo "$left"
}

run mr_p2p 1 "$B/tests/mr/mr_p2p"
run mr_p2p 2 "$B/tests/mr/mr_p2p"
run mr_p2p 4 "$B/tests/mr/mr_p2p"
run "mr_pgc (pgc_ API, default store)" 2 "$B/tests/mr/mr_pgc"
run "mr_pgc (pgc_ API, default store)" 4 "$B/tests/mr/mr_pgc"
run "mr_p2p (PMI_PORT)" 2 -pmi-port "$B/tests/mr/mr_p2p"

# Each rank's pid goes to a file before the program starts (exec keeps it): hydra's
# forwarding of the ranks' output may lose what they printed once it kills the job.
cat >"$tmp/wrap.sh" <<'W'
#!/bin/sh
echo "pid $PMI_RANK $$" >>"$PIDS"
exec "$@"
W
chmod +x "$tmp/wrap.sh"

# MPI_Abort in rank 1 while ranks 0 and 2 wait in a barrier.
PIDS=$tmp/abort.pids timeout -k 5 60 "$HYDRA" -n 3 "$tmp/wrap.sh" "$B/tests/scripts/early_exit" \
    abort </dev/null >"$tmp/abort" 2>&1
rc=$?
cat "$tmp/abort.pids" >>"$tmp/abort"
left=$(nothing_left "$tmp/abort.pids")
npid=$(grep -c '^pid ' "$tmp/abort.pids")
if [ $rc = 0 ] || [ $rc = 124 ] || [ $rc = 137 ]; then
    not_ok "MPI_Abort in rank 1 of 3 ends the job with a non-zero status (exit $rc)" "$tmp/abort"
elif [ "$npid" != 3 ]; then
    not_ok "MPI_Abort in rank 1 of 3: $npid ranks printed their pid" "$tmp/abort"
elif [ -n "$left" ]; then
    not_ok "MPI_Abort in rank 1 of 3 left behind:$left" "$tmp/abort"
else
    ok "MPI_Abort in rank 1 of 3 ends the job (exit $rc), no process or segment left"
fi

# Rank 1 exits 0 without MPI_Finalize while ranks 0 and 2 wait for it in a barrier.
PIDS=$tmp/exit0.pids MPISHIM_TIMEOUT=10 timeout -k 5 60 "$HYDRA" -n 3 "$tmp/wrap.sh" \
    "$B/tests/scripts/early_exit" exit0 </dev/null >"$tmp/exit0" 2>&1
rc=$?
cat "$tmp/exit0.pids" >>"$tmp/exit0"
left=$(nothing_left "$tmp/exit0.pids")
if [ $rc = 0 ] || [ $rc = 124 ] || [ $rc = 137 ]; then
    not_ok "a rank that exits without MPI_Finalize fails the job (exit $rc)" "$tmp/exit0"
elif ! grep -Eq 'rank 1[^0-9].*(died|dead|exited|gone)' "$tmp/exit0"; then
    not_ok "a rank that exits without MPI_Finalize: no line names rank 1" "$tmp/exit0"
elif [ -n "$left" ]; then
    not_ok "a rank that exits without MPI_Finalize left behind:$left" "$tmp/exit0"
else
    ok "a rank that exits without MPI_Finalize fails the job (exit $rc), rank 1 named"
fi

[ $failures = 0 ] && echo PASS
exit $((failures > 0))
