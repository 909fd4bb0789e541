#!/bin/bash
# test_mpiexec.sh - the launcher's process management, with small shell programs as ranks:
# the variables each rank sees, exit-code propagation, a rank killed by a signal, --timeout,
# SIGINT to mpiexec, --tag-output, option errors, and that no rank's children outlive it.
set -uo pipefail

top_builddir=${top_builddir:-$PWD}
MPIEXEC=$top_builddir/tools/mpiexec
[ -x "$MPIEXEC" ] || { echo "test_mpiexec.sh: $MPIEXEC is not built"; exit 99; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0

ok() { echo "ok   - $1"; }
not_ok() {
    echo "FAIL - $1"
    shift
    for l in "$@"; do echo "       $l"; done
    failures=$((failures + 1))
}
# expect NAME EXPECTED ACTUAL
expect() {
    if [ "$2" = "$3" ]; then ok "$1"; else not_ok "$1" "expected: $(printf %q "$2")" "got:      $(printf %q "$3")"; fi
}
now() { date +%s.%N; }
# elapsed_below START SECONDS: true when less than SECONDS passed since START.
elapsed_below() { awk -v s="$1" -v e="$(now)" -v m="$2" 'BEGIN { exit !(e - s < m) }'; }
# gone PIDFILE...: true when none of the pids in the files is alive (zombies count as gone).
gone() {
    local f p
    for f in "$@"; do
        p=$(cat "$f" 2>/dev/null) || continue
        case "$(ps -o stat= -p "$p" 2>/dev/null)" in "" | Z*) ;; *) return 1 ;; esac
    done
    return 0
}

# 1. Every rank sees its own RANK and the job's sizes.
out=$(timeout 20 "$MPIEXEC" -n 4 sh -c 'echo "$RANK $WORLD_SIZE $LOCAL_RANK $LOCAL_WORLD_SIZE"' | sort)
expect "each rank sees RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE" \
    "$(printf '0 4 0 4\n1 4 1 4\n2 4 2 4\n3 4 3 4')" "$out"

out=$(timeout 20 "$MPIEXEC" -np 2 sh -c 'echo "$MASTER_ADDR $MPISHIM_BOOT_STORE_EXTERNAL $MPISHIM_BOOT_METHOD"' | sort -u)
expect "-np works and ranks get MASTER_ADDR and the env:// settings" "127.0.0.1 1 env" "$out"

# 2. The store mpiexec serves accepts connections on MASTER_PORT.
out=$(timeout 20 "$MPIEXEC" -n 1 bash -c 'exec 3<>/dev/tcp/$MASTER_ADDR/$MASTER_PORT && echo connected')
expect "the rendezvous store listens on MASTER_ADDR:MASTER_PORT" "connected" "$out"

# The library's env:// bootstrap works against the launcher's store (rank 0 connects to it
# as a client: MPISHIM_BOOT_STORE_EXTERNAL=1), including an allgather over all ranks.
probe=$top_builddir/tests/scripts/boot_probe
if [ -x "$probe" ]; then
    out=$(timeout 60 "$MPIEXEC" -n 4 "$probe" | sort)
    expect "4 ranks bootstrap through mpiexec's store and allgather" \
        "$(printf 'rank 0/4 method env ok\nrank 1/4 method env ok\nrank 2/4 method env ok\nrank 3/4 method env ok')" "$out"
else
    not_ok "tests/scripts/boot_probe is built" "missing: $probe"
fi

# 3. Variables of other launchers do not leak into the ranks; -x sets variables.
out=$(PMIX_RANK=5 PMIX_NAMESPACE=x SLURM_JOB_ID=9 OMPI_COMM_WORLD_RANK=3 RANK=8 \
    timeout 20 "$MPIEXEC" -n 1 -x MY_VAR=42 -x RANK=99 env | grep -E '^(PMIX_|SLURM_|OMPI_|MY_VAR=|RANK=)' | sort)
expect "PMIX_/SLURM_/OMPI_ variables are removed, -x VAR=VAL is set, RANK is ours" \
    "$(printf 'MY_VAR=42\nRANK=0')" "$out"

# 4. Success only when every rank succeeds.
timeout 20 "$MPIEXEC" -n 3 true
expect "all ranks exit 0: mpiexec exits 0" 0 $?

# 5. A failing rank's code is propagated and the others are ended.
t0=$(now)
timeout 30 "$MPIEXEC" -n 3 sh -c '[ "$RANK" = 1 ] && exit 7; exec sleep 30' 2>"$tmp/err"
rc=$?
expect "rank 1 exits 7: mpiexec exits 7" 7 $rc
expect "the failing rank is named on one line" "mpiexec: rank 1 exited with code 7" "$(cat "$tmp/err")"
elapsed_below "$t0" 5 && ok "the other ranks are ended at once" || not_ok "the other ranks are ended at once" "took more than 5 s"

# 6. A rank killed by SIGKILL ends the job within a few seconds, named with its signal.
t0=$(now)
timeout 30 "$MPIEXEC" -n 4 sh -c 'echo $$ > '"$tmp"'/pid.$RANK; [ "$RANK" = 2 ] && { sleep 0.3; kill -9 $$; }; exec sleep 30' 2>"$tmp/err"
rc=$?
expect "rank killed by SIGKILL: mpiexec exits 128+9" 137 $rc
expect "the killed rank is named with its signal" "mpiexec: rank 2 killed by signal 9 (SIGKILL)" "$(cat "$tmp/err")"
elapsed_below "$t0" 5 && ok "the job ends within 5 s of the kill" || not_ok "the job ends within 5 s of the kill"
gone "$tmp"/pid.* && ok "no rank survives the job" || not_ok "no rank survives the job"

# 7. A rank that ignores SIGTERM is killed 2 s later; its background children go too.
t0=$(now)
timeout 30 "$MPIEXEC" -n 2 sh -c 'trap "" TERM; sleep 30 & echo $! > '"$tmp"'/bg.$RANK; [ "$RANK" = 0 ] && exit 3; wait' 2>/dev/null
rc=$?
expect "exit code of the first failing rank wins over the killed ones" 3 $rc
elapsed_below "$t0" 6 && ok "SIGKILL follows SIGTERM within the grace period" || not_ok "SIGKILL follows SIGTERM within the grace period"
sleep 0.2
gone "$tmp"/bg.* && ok "children started by ranks do not outlive the job" || not_ok "children started by ranks do not outlive the job"

# 8. --timeout ends the job with a message and exit code 124.
t0=$(now)
timeout 30 "$MPIEXEC" -n 2 --timeout 1 sleep 30 2>"$tmp/err"
rc=$?
expect "--timeout: exit code 124" 124 $rc
grep -q "timed out after 1 s" "$tmp/err" && ok "--timeout prints why" || not_ok "--timeout prints why" "$(cat "$tmp/err")"
elapsed_below "$t0" 5 && ok "--timeout 1 ends the job in time" || not_ok "--timeout 1 ends the job in time"

# 9. SIGINT to mpiexec is forwarded and ends the job (exit 130), leaving no rank behind.
rm -f "$tmp"/pid.*
"$MPIEXEC" -n 3 sh -c 'echo $$ > '"$tmp"'/pid.$RANK; exec sleep 30' 2>"$tmp/err" &
mp=$!
for _ in $(seq 1 50); do [ "$(ls "$tmp"/pid.* 2>/dev/null | wc -l)" = 3 ] && break; sleep 0.1; done
t0=$(now)
kill -INT $mp
wait $mp
rc=$?
expect "SIGINT to mpiexec: exit code 130" 130 $rc
elapsed_below "$t0" 5 && ok "SIGINT ends the job quickly" || not_ok "SIGINT ends the job quickly"
gone "$tmp"/pid.* && ok "SIGINT leaves no rank behind" || not_ok "SIGINT leaves no rank behind"

# 10. --tag-output prefixes every line of stdout and stderr with the rank.
out=$(timeout 20 "$MPIEXEC" -n 3 --tag-output sh -c 'echo "out $RANK"; echo "err $RANK" >&2; printf "tail"' 2>"$tmp/err" | sort)
expect "--tag-output prefixes stdout lines (an unterminated last line too)" \
    "$(printf '[0]: out 0\n[0]: tail\n[1]: out 1\n[1]: tail\n[2]: out 2\n[2]: tail')" "$out"
expect "--tag-output prefixes stderr lines" "$(printf '[0]: err 0\n[1]: err 1\n[2]: err 2')" "$(sort "$tmp/err")"

# Lines of different ranks never mix: every line of 4 ranks x 200 lines is whole.
bad=$(timeout 20 "$MPIEXEC" -n 4 --tag-output sh -c 'i=0; while [ $i -lt 200 ]; do echo "r$RANK-line-$i-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"; i=$((i+1)); done' |
    grep -cvE '^\[([0-3])\]: r\1-line-[0-9]+-x{42}$')
expect "--tag-output never interleaves inside a line" 0 "$bad"

# 11. Option errors.
timeout 10 "$MPIEXEC" --bogus -n 2 true 2>"$tmp/err"
rc=$?
expect "an unknown option exits 2" 2 $rc
grep -q "^usage: mpiexec" "$tmp/err" && ok "an unknown option prints the usage" || not_ok "an unknown option prints the usage"
timeout 10 "$MPIEXEC" -n 0 true 2>/dev/null
expect "-n 0 is rejected" 2 $?
timeout 10 "$MPIEXEC" -n 2 /nonexistent/prog 2>"$tmp/err"
expect "a missing program exits 127" 127 $?

# 12. mpirun is the same program.
if [ -x "$top_builddir/tools/mpirun" ]; then
    out=$(timeout 20 "$top_builddir/tools/mpirun" -n 2 sh -c 'echo $WORLD_SIZE' | sort -u)
    expect "mpirun runs like mpiexec" 2 "$out"
fi

echo "$failures failed"
[ $failures = 0 ]
