#!/bin/sh
# The store hardened (issue 40): tests/scripts/store_tool serves a store with a token and
# small caps, attacks it (no token, a wrong token, a planted key, a frame, keys, bytes and
# an answer past their caps) and keeps a client that reads nothing and one that never
# authenticates connected; a 3-rank job (boot_probe, the launcher's-store mode mpiexec
# uses) then completes on that store, and a rank without the token is refused.
set -u
B=${top_builddir:-$(pwd)}
TOOL=$B/tests/scripts/store_tool
PROBE=$B/tests/scripts/boot_probe
for p in "$TOOL" "$PROBE"; do
    [ -x "$p" ] || { echo "SKIP: $p is not built"; exit 77; }
done
tmp=$(mktemp -d /tmp/test_store_attack.XXXXXX)
tool_pid=
cleanup() {
    exec 3>&- 2>/dev/null
    [ -n "$tool_pid" ] && kill "$tool_pid" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; cat "$tmp"/*.out 2>/dev/null; exit 1; }

token=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
mkfifo "$tmp/hold"
MPISHIM_STORE_FRAME_MAX=8388608 MPISHIM_STORE_BUFFER_MAX=12000000 MPISHIM_STORE_KEYS_MAX=64 \
MPISHIM_STORE_DATA_MAX=8388608 "$TOOL" "$token" <"$tmp/hold" >"$tmp/tool.out" 2>&1 &
tool_pid=$!
exec 3>"$tmp/hold"
i=0
until grep -q '^ready' "$tmp/tool.out"; do
    kill -0 "$tool_pid" 2>/dev/null || fail "store_tool ended before it was ready"
    i=$((i + 1)); [ $i -lt 600 ] || fail "store_tool not ready after 60 s"
    sleep 0.1
done
cat "$tmp/tool.out"
grep -q '^NOT REFUSED' "$tmp/tool.out" && fail "an attack was not refused"
for a in "no token" "wrong token" "planted key" frame keys data buffer; do
    grep -q "^refused $a" "$tmp/tool.out" || fail "no verdict for the attack '$a'"
done
port=$(sed -n 's/^port //p' "$tmp/tool.out")

# The job completes while the hostile connections stay open.
export MASTER_ADDR=127.0.0.1 MASTER_PORT=$port MPISHIM_BOOT_METHOD=env \
    MPISHIM_BOOT_STORE_EXTERNAL=1 WORLD_SIZE=3 MPISHIM_TIMEOUT=30
pids=
for r in 0 1 2; do
    RANK=$r MPISHIM_STORE_TOKEN=$token "$PROBE" >"$tmp/rank$r.out" 2>&1 &
    pids="$pids $!"
done
for p in $pids; do wait "$p" || fail "a rank of the job failed next to the attackers"; done
for r in 0 1 2; do
    grep -q "^rank $r/3 method env ok" "$tmp/rank$r.out" || fail "rank $r did not report ok"
done
echo "ok: the 3-rank job completed next to the attackers"

# A process without the job's token reads and writes nothing: it is refused at init.
RANK=0 WORLD_SIZE=1 MPISHIM_STORE_TOKEN= "$PROBE" >"$tmp/intruder.out" 2>&1 &&
    fail "a rank without the token initialized"
grep -q "refused this process: the store requires a token" "$tmp/intruder.out" ||
    fail "the refusal does not say why"
cat "$tmp/intruder.out"

exec 3>&-
wait "$tool_pid" || fail "store_tool reported a failure"
tool_pid=
echo "PASS"
