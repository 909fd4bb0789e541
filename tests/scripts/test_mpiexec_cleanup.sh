#!/bin/sh
# mpiexec's end of a job (issue 40): a rank that exits 0 without MPI_Finalize while the
# others still run ends the job with a non-zero code and a line naming it; the
# /dev/shm/mpishim-<pid>-* segments of every rank it reaped are gone afterwards, also those
# of a rank it terminated inside MPI_Init; "no launcher to ask to end the other ranks" is
# never printed under mpiexec; a job that finalizes, and a program that never uses the
# library, still exit 0.
set -u
B=${top_builddir:-$(pwd)}
MPIEXEC=$B/tools/mpiexec
PROG=$B/tests/scripts/early_exit
for p in "$MPIEXEC" "$PROG"; do
    [ -x "$p" ] || { echo "SKIP: $p is not built"; exit 77; }
done
[ -d /dev/shm ] || { echo "SKIP: no /dev/shm on this machine"; exit 77; }
tmp=$(mktemp -d /tmp/test_mpiexec_cleanup.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; cat "$tmp"/*.out 2>/dev/null; exit 1; }
export MPISHIM_TIMEOUT=60

# Every pid the ranks printed ("pid RANK PID") has no segment left.
no_segments_left() {
    n=0
    for p in $(sed -n 's/^pid [0-9]* \([0-9]*\)$/\1/p' "$1"); do
        n=$((n + 1))
        ls /dev/shm/mpishim-"$p"-* >/dev/null 2>&1 && fail "segments of pid $p remain: $(ls /dev/shm/mpishim-"$p"-*)"
    done
    [ "$n" -ge "$2" ] || fail "expected $2 pids in $1, found $n"
}

"$MPIEXEC" -n 3 "$PROG" exit0 >"$tmp/exit0.out" 2>"$tmp/exit0.err"
rc=$?
cat "$tmp/exit0.err"
[ $rc -ne 0 ] || fail "a rank left without MPI_Finalize and mpiexec returned 0"
grep -q "mpiexec: rank 1 exited with code 0 without calling MPI_Finalize" "$tmp/exit0.err" ||
    fail "mpiexec did not name rank 1"
grep -q "no launcher to ask" "$tmp/exit0.err" && fail "'no launcher' printed under mpiexec"
no_segments_left "$tmp/exit0.out" 3

# Rank 1 fails inside MPI_Init (a provider that does not exist) while rank 0 has created
# its segment and waits for it: mpiexec terminates rank 0, whose segment it must remove.
cat >"$tmp/wrap.sh" <<'W'
#!/bin/sh
echo "pid $RANK $$"
[ "$RANK" = 1 ] && export MPISHIM_FABRIC_PROVIDER=no-such-provider
exec "$@"
W
chmod +x "$tmp/wrap.sh"
"$MPIEXEC" -n 2 "$tmp/wrap.sh" "$PROG" ok >"$tmp/init.out" 2>"$tmp/init.err"
rc=$?
cat "$tmp/init.err"
[ $rc -ne 0 ] || fail "a rank failed in MPI_Init and mpiexec returned 0"
grep -q "no launcher to ask" "$tmp/init.err" && fail "'no launcher' printed under mpiexec"
no_segments_left "$tmp/init.out" 2

# A fatal error after MPI_Init goes through boot_abort, which under mpiexec must not say
# that nobody will end the other ranks.
if [ -x "$B/tests/mr/mr_fatal" ]; then
    "$MPIEXEC" -n 2 "$B/tests/mr/mr_fatal" badrank >"$tmp/abort.out" 2>&1 &&
        fail "mr_fatal badrank exited 0"
    grep -q "boot_abort (env" "$tmp/abort.out" || fail "boot_abort did not report"
    grep -q "no launcher to ask" "$tmp/abort.out" && fail "'no launcher' printed under mpiexec"
fi

"$MPIEXEC" -n 2 "$PROG" ok >"$tmp/ok.out" 2>&1 || fail "a job that finalized failed"
no_segments_left "$tmp/ok.out" 2
"$MPIEXEC" -n 2 true || fail "mpiexec -n 2 true failed (a program without the library)"
echo "PASS"
