#!/bin/bash
# rpc_compare.sh [ROUNDS] [ITERS] - pgc_rpc_sync against torch's rpc_sync, echo round trips
# of 8 B, 1 KiB and 1 MiB between two processes of this machine, interleaved: each round
# runs bench/bench_rpc (mpiexec -n 2) then bench/rpc_torch.py (two env:// processes), so
# that load from elsewhere hits both alike. Prints every round's medians and, per size, the
# median over rounds and the ratio torch / ours. Run from the build directory. Without
# torch (apt-get install python3-torch), only our side runs. Not a test: on a shared,
# loaded machine the numbers are noisy.
set -uo pipefail

rounds=${1:-5}
iters=${2:-1000}
top_builddir=${top_builddir:-$PWD}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
have_torch=0
python3 -c 'import torch' 2>/dev/null && have_torch=1
[ $have_torch = 1 ] || echo "# torch is not installed (apt-get install python3-torch): ours only"

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

for r in $(seq 1 "$rounds"); do
    "$top_builddir/tools/mpiexec" -n 2 "$top_builddir/bench/bench_rpc" "$iters" |
        grep -v '^#' | sed "s/^/ours $r /" >>"$tmp/all"
    if [ $have_torch = 1 ]; then
        port=$(free_port)
        RANK=1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
            python3 "$here/rpc_torch.py" "$iters" >/dev/null 2>&1 &
        RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
            python3 "$here/rpc_torch.py" "$iters" | grep -v '^#' | sed "s/^/torch $r /" >>"$tmp/all"
        wait
    fi
done
echo "# who round size median_us mean_us"
cat "$tmp/all"
python3 - "$tmp/all" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
print("# size  ours_median_us  torch_median_us  torch/ours   (median over rounds)")
for size in sorted({int(r[2]) for r in rows}):
    med = {}
    for who in ("ours", "torch"):
        v = [float(r[3]) for r in rows if r[0] == who and int(r[2]) == size]
        med[who] = statistics.median(v) if v else None
    t = med["torch"]
    print("%7d %15.1f %16s %11s" % (size, med["ours"], "%.1f" % t if t else "-",
                                     "%.1f" % (t / med["ours"]) if t else "-"))
PY
