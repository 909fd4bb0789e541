#!/bin/sh
# Duplicate ranks and mismatched WORLD_SIZE in a hand-started env:// job (issue 40): every
# process fails at init with one message naming both processes (rank, host, pid), instead
# of a timeout that names a present rank as missing. MPISHIM_TIMEOUT is 60 s: a run that
# waits for it instead of failing at once would show here as a timeout of the suite.
set -u
B=${top_builddir:-$(pwd)}
PROBE=$B/tests/scripts/boot_probe
[ -x "$PROBE" ] || { echo "SKIP: $PROBE is not built"; exit 77; }
tmp=$(mktemp -d /tmp/test_boot_dup.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; cat "$tmp"/*.out 2>/dev/null; exit 1; }
free_port() { # as test_env_launch.sh picks one
    if command -v python3 >/dev/null; then
        python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
    else
        echo $((20000 + $$ % 30000))
    fi
}
port=$(free_port)
export MASTER_ADDR=127.0.0.1 MPISHIM_BOOT_METHOD=env MPISHIM_TIMEOUT=60
unset MPISHIM_BOOT_STORE_EXTERNAL MPISHIM_STORE_TOKEN

# Rank 1 twice in a job of 3: the count of registered ranks never reaches 3, so whichever
# order they come in, the second process of rank 1 wakes every other with its message.
start() { # name rank size
    RANK=$2 WORLD_SIZE=$3 MASTER_PORT=$port "$PROBE" >"$tmp/$1.out" 2>&1 &
    eval "pid_$1=\$!"
}
start r0 0 3
start r1a 1 3
start r1b 1 3
for n in r0 r1a r1b; do
    eval "wait \$pid_$n" && fail "$n initialized in a job with rank 1 twice"
    grep -q "rank 1 was started twice: by host [^,]*, pid [0-9]*, and by host [^,]*, pid [0-9]*" \
        "$tmp/$n.out" || fail "$n does not name both processes of rank 1"
done
for n in r1a r1b; do # both pids of rank 1 appear in every message
    eval "p=\$pid_$n"
    grep -q "pid $p" "$tmp/r0.out" || fail "rank 0's message lacks pid $p"
done
cat "$tmp"/r0.out "$tmp"/r1a.out "$tmp"/r1b.out

# Rank 0 says WORLD_SIZE=2, rank 1 says 3.
port=$(free_port)
start w0 0 2
start w1 1 3
for n in w0 w1; do
    eval "wait \$pid_$n" && fail "$n initialized with mismatched WORLD_SIZE"
    eval "p0=\$pid_w0; p1=\$pid_w1"
    grep -q "disagree on WORLD_SIZE: rank 0 (host [^,]*, pid $p0) has 2, rank 1 (host [^,]*, pid $p1) has 3" \
        "$tmp/$n.out" || fail "$n does not name both processes and sizes"
done
cat "$tmp"/w0.out "$tmp"/w1.out

# A hand launch whose ranks share a token works; one whose ranks differ is refused.
port=$(free_port)
export MPISHIM_STORE_TOKEN=shared-secret
start t0 0 2
start t1 1 2
wait $pid_t0 && wait $pid_t1 || fail "a job with a shared token failed"
port=$(free_port)
start u0 0 2
MPISHIM_STORE_TOKEN=other-secret start u1 1 2
wait $pid_u1 && fail "a rank with another token initialized"
grep -q "its MPISHIM_STORE_TOKEN is not the job's token" "$tmp/u1.out" ||
    fail "the refused rank does not say why"
kill $pid_u0 2>/dev/null
wait $pid_u0
echo "PASS"
