#!/bin/bash
# test_env_launch.sh - launching pgc programs without a launcher, as the torch.distributed
# documents do: the same binary started twice in the background (the "two shells") with
# RANK=0/1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=<free port> (env://, explicitly
# and through "auto"); tcp://host:port and file:///path with explicit rank and size; and a
# rendezvous that never completes (a missing peer, a port nobody serves), which must fail
# with an error within the timeout instead of hanging; and a failed initialization that the
# same processes retry.
#
# The rank program is tests/mr/mr_pgc_init (an all_reduce and a store check). When the
# examples are built, examples/pgc_all_reduce runs through the two-shell launch too.
set -uo pipefail

top_builddir=${top_builddir:-$PWD}
PROG=$top_builddir/tests/mr/mr_pgc_init
[ -x "$PROG" ] || { echo "test_env_launch.sh: $PROG is not built"; exit 99; }
tmp=$(mktemp -d)
cleanup() {
    # Only the jobs this script started.
    local p
    for p in $(jobs -p); do kill "$p" 2>/dev/null; done
    rm -rf "$tmp"
}
trap cleanup EXIT
failures=0

# A launcher's variables must not leak into the manual launches.
unset PMIX_RANK PMIX_NAMESPACE PMIX_SERVER_URI41 PMIX_SERVER_URI4 PMIX_SERVER_URI3 \
    PMIX_SERVER_URI2 RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE MASTER_ADDR MASTER_PORT \
    MPISHIM_BOOT_METHOD MPISHIM_BOOT_STORE_EXTERNAL
export MPISHIM_TIMEOUT=${MPISHIM_TIMEOUT:-60}

ok() { echo "ok   - $1"; }
not_ok() {
    echo "FAIL - $1"
    shift
    for f in "$@"; do [ -f "$f" ] && sed 's/^/       /' "$f"; done
    failures=$((failures + 1))
}
now() { date +%s.%N; }
elapsed_below() { awk -v s="$1" -v e="$(now)" -v m="$2" 'BEGIN { exit !(e - s < m) }'; }

free_port() {
    if command -v python3 >/dev/null; then
        python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
    else
        echo $((20000 + RANDOM % 30000))
    fi
}

# two NAME PROG WORDS0 WORDS1: starts rank 0 and rank 1 of PROG in the background, each with
# its words ("VAR=value ... -- args ...", split on spaces); both must exit 0 and rank r
# must print "rank r of 2".
two() {
    local name=$1 prog=$2 w0=$3 w1=$4 rc0 rc1
    # shellcheck disable=SC2086 # the words are split on purpose
    env ${w0%%--*} timeout 60 "$prog" ${w0#*--} >"$tmp/out.0" 2>&1 &
    local p0=$!
    # shellcheck disable=SC2086
    env ${w1%%--*} timeout 60 "$prog" ${w1#*--} >"$tmp/out.1" 2>&1 &
    local p1=$!
    wait "$p0"
    rc0=$?
    wait "$p1"
    rc1=$?
    if [ $rc0 = 0 ] && [ $rc1 = 0 ] && grep -qi 'rank 0' "$tmp/out.0" &&
        grep -qi 'rank 1' "$tmp/out.1"; then
        ok "$name (exit codes $rc0 $rc1)"
    else
        not_ok "$name (exit codes $rc0 $rc1)" "$tmp/out.0" "$tmp/out.1"
    fi
}

# 1. The two-shell env:// launch, with the init method named and with "auto".
port=$(free_port)
env_common="WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port"
two "env:// two-shell launch" "$PROG" "RANK=0 $env_common -- --init-method env://" \
    "RANK=1 $env_common -- --init-method env://"
port=$(free_port)
env_common="WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port"
two "auto picks env:// from RANK and WORLD_SIZE" "$PROG" "RANK=0 $env_common --" \
    "RANK=1 $env_common --"

# 2. tcp:// and file:// with explicit rank and world size.
port=$(free_port)
url=tcp://127.0.0.1:$port
two "$url with --rank and --world-size" "$PROG" "-- --init-method $url --rank 0 --world-size 2" \
    "-- --init-method $url --rank 1 --world-size 2"
url=file://$tmp/rendezvous
two "file:// rendezvous" "$PROG" "-- --init-method $url --rank 0 --world-size 2" \
    "-- --init-method $url --rank 1 --world-size 2"

# 3. A rendezvous that never completes fails with an error within its timeout.
# fails NAME ARGS...: one rank alone must exit 0 from --expect-fail within 20 s.
fails() {
    local name=$1 start rc
    shift
    start=$(now)
    timeout 60 "$PROG" --expect-fail --timeout 3 "$@" >"$tmp/fail" 2>&1
    rc=$?
    if [ $rc = 0 ] && elapsed_below "$start" 20 && grep -q 'failed as expected' "$tmp/fail"; then
        ok "$name fails within the timeout: $(sed -n 's/.*failed as expected with //p' "$tmp/fail" | cut -c1-100)"
    else
        not_ok "$name fails within the timeout (exit $rc)" "$tmp/fail"
    fi
}
port=$(free_port)
fails "tcp:// rank 0 whose peer never comes" --init-method "tcp://127.0.0.1:$port" --rank 0 \
    --world-size 2
port=$(free_port)
fails "tcp:// rank 1 with nobody serving the port" --init-method "tcp://127.0.0.1:$port" \
    --rank 1 --world-size 2
port=$(free_port)
RANK=1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
    fails "env:// rank 1 with no rank 0" --init-method env://

# 4. A peer that dies after the rendezvous: the survivor's all_reduce fails within the
# timeout, a group of the survivors made before still works, and destroying the process
# group reports the dead peer (the survivor exits 0 from --peer-dies when all three held).
port=$(free_port)
env_common="WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port"
start=$(now)
two "a peer that dies: the survivor's all_reduce fails" "$PROG" \
    "RANK=0 $env_common -- --peer-dies --timeout 3" "RANK=1 $env_common -- --peer-dies --timeout 3"
if elapsed_below "$start" 30 && grep -q 'all_reduce failed as expected' "$tmp/out.0" &&
    grep -q "survivors' group still works" "$tmp/out.0" &&
    grep -q 'destroy_process_group failed as expected' "$tmp/out.0"; then
    ok "the survivor reported: $(sed -n 's/.*all_reduce failed as expected with //p' "$tmp/out.0" | cut -c1-110)"
else
    not_ok "the survivor reported an error within the timeout" "$tmp/out.0"
fi

# 5. An initialization that fails after the rendezvous (MPISHIM_FABRIC_PROVIDER names no
# provider) gives everything back: rank 0's MASTER_PORT is free again, and a second
# initialization in the same processes (provider unset, a fresh port) works.
port=$(free_port)
port2=$(free_port)
env_common="WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port"
two "a failed initialization, then a retry in the same processes" "$PROG" \
    "RANK=0 $env_common -- --init-method env:// --timeout 10 --retry-port $port2" \
    "RANK=1 $env_common -- --init-method env:// --timeout 10 --retry-port $port2"
if grep -q 'first initialization failed as expected' "$tmp/out.0"; then
    ok "the first try reported: $(sed -n 's/.*failed as expected with //p' "$tmp/out.0" | cut -c1-110)"
else
    not_ok "the first try reported its error" "$tmp/out.0"
fi

# 6. An example of the documents through the two-shell launch, when the examples are built.
EX=$top_builddir/examples/pgc_all_reduce
if [ -x "$EX" ]; then
    port=$(free_port)
    env_common="WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port"
    two "examples/pgc_all_reduce two-shell launch" "$EX" "RANK=0 $env_common --" \
        "RANK=1 $env_common --"
else
    echo "skip - examples/pgc_all_reduce is not built"
fi

# 7. IPv6: MASTER_ADDR and tcp:// given as IPv6 addresses (torch takes both), the store on
# ::1 and the ranks' sockets between two node names on this host over ::1 too (the fabric
# told the subnet ::1/128), where this host has IPv6 loopback.
if grep -q '^0\{31\}1 ' /proc/net/if_inet6 2>/dev/null; then
    port=$(free_port)
    env_common="WORLD_SIZE=2 MASTER_ADDR=::1 MASTER_PORT=$port MPISHIM_FABRIC_IFACE=::1/128"
    two "env:// with MASTER_ADDR=::1, two node names, sockets over ::1" "$PROG" \
        "RANK=0 $env_common MPISHIM_NODE_NAME=v6a -- --init-method env://" \
        "RANK=1 $env_common MPISHIM_NODE_NAME=v6b -- --init-method env://"
    port=$(free_port)
    url="tcp://[::1]:$port"
    two "$url with --rank and --world-size" "$PROG" \
        "-- --init-method $url --rank 0 --world-size 2" \
        "-- --init-method $url --rank 1 --world-size 2"
else
    echo "skip - IPv6 launches: this host has no IPv6 loopback (::1 in /proc/net/if_inet6)"
fi

[ $failures = 0 ] || { echo "$failures failed"; exit 1; }
echo "all passed"
