#!/bin/bash
# test_rpc.sh - torch.distributed.rpc in C (include/pgc_rpc.h):
#  1. tests/mr/mr_rpc at 1-4 workers on one node and over libfabric's tcp provider, with
#     the build tree's mpiexec (the cases of tests/rpc.list, through run_mr.sh);
#  2. a callee killed in the middle of a call (tests/mr/mr_rpc_dead): two workers started
#     with env:// without a launcher (one would end the job when w1 dies); w1 must die by
#     SIGKILL and w0 exit 0, having seen its calls fail with the worker and the function
#     named: at once on shared memory, at the call's timeout over tcp (--timeout-ok).
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top_srcdir=${top_srcdir:-$(cd "$here/../.." && pwd)}
top_builddir=${top_builddir:-$PWD}
export top_srcdir top_builddir
DEAD=$top_builddir/tests/mr/mr_rpc_dead
[ -x "$DEAD" ] || { echo "test_rpc.sh: $DEAD is not built"; exit 99; }
tmp=$(mktemp -d)
cleanup() {
    local p
    for p in $(jobs -p); do kill "$p" 2>/dev/null; done
    rm -rf "$tmp"
}
trap cleanup EXIT
failures=0

"$here/run_mr.sh" "$top_srcdir/tests/rpc.list" || failures=$((failures + 1))

unset PMIX_RANK PMIX_NAMESPACE PMIX_SERVER_URI41 PMIX_SERVER_URI4 PMIX_SERVER_URI3 \
    PMIX_SERVER_URI2 RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE MASTER_ADDR MASTER_PORT \
    MPISHIM_BOOT_METHOD MPISHIM_BOOT_STORE_EXTERNAL

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# dead NAME PROVIDER ARGS...: w1 killed mid-call, w0 must report it and exit 0.
dead() {
    local name=$1 prov=$2 port rc0 rc1
    shift 2
    port=$(free_port)
    env ${prov:+MPISHIM_FABRIC_PROVIDER=$prov} RANK=1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 \
        MASTER_PORT="$port" timeout 60 "$DEAD" "$@" >"$tmp/out.1" 2>&1 &
    local p1=$!
    env ${prov:+MPISHIM_FABRIC_PROVIDER=$prov} RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 \
        MASTER_PORT="$port" timeout 60 "$DEAD" "$@" >"$tmp/out.0" 2>&1
    rc0=$?
    wait "$p1"
    rc1=$?
    if [ $rc0 = 0 ] && [ $rc1 = 137 ] && grep -q 'mr_rpc_dead: ok' "$tmp/out.0"; then
        echo "ok   - $name: $(grep -m1 'call of die' "$tmp/out.0" | cut -c1-140)"
    else
        echo "FAIL - $name (exit codes $rc0 $rc1)"
        sed 's/^/       /' "$tmp/out.0" "$tmp/out.1"
        failures=$((failures + 1))
    fi
}
dead "a callee killed mid-call (shared memory)" ""
dead "a callee killed mid-call (tcp;ofi_rxm)" "tcp;ofi_rxm" --timeout-ok

[ $failures = 0 ] || exit 1
exit 0
