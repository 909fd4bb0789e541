#!/bin/bash
# rpc_compare.sh [ROUNDS] [ITERS] [OUTDIR] - pgc_rpc_sync against torch's rpc_sync, echo round
# trips of 8 B, 1 KiB and 1 MiB between two processes of this machine, interleaved: each
# round runs bench/bench_rpc (mpiexec -n 2) and bench/rpc_torch.py (two env:// processes),
# the order alternating from round to round, so that load from elsewhere hits both alike.
# Each program reports its median per size; the table gives, per size, the median of those
# over rounds, the ratio torch / ours and the issue's target (#43: ours <= 1/20 of torch at
# 8 B, <= 1/2 at 1 MiB). The 1-minute load average is recorded before every run.
#
# Run from the build directory. OUTDIR (default rpc-compare-out) receives rounds.csv,
# table.txt and, with matplotlib, plot.png. torch comes from Debian's python3-torch, which
# installs for /usr/bin/python3 (a python3 earlier on PATH may lack it): the first of
# $TORCH_PYTHON, python3 and /usr/bin/python3 that imports torch runs the torch side.
# Without one, only our side runs. Not a test: on a shared, loaded machine the numbers are
# noisy.
set -uo pipefail

rounds=${1:-5}
iters=${2:-1000}
out=${3:-rpc-compare-out}
top_builddir=${top_builddir:-$PWD}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out" || exit 1
[ -x "$top_builddir/bench/bench_rpc" ] || {
    echo "rpc_compare.sh: $top_builddir/bench/bench_rpc is not built (run from the build directory)"
    exit 1
}

tpy=
for p in ${TORCH_PYTHON:-} python3 /usr/bin/python3; do
    if "$p" -c 'import torch' 2>/dev/null; then
        tpy=$p
        break
    fi
done
[ -n "$tpy" ] || echo "# torch is not installed (apt-get install python3-torch): ours only"

load1() { cut -d' ' -f1 /proc/loadavg; }

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# run_ours ROUND: appends "ours,ROUND,size,median,mean,load" rows to rounds.csv.
run_ours() {
    local l
    l=$(load1)
    "$top_builddir/tools/mpiexec" -n 2 "$top_builddir/bench/bench_rpc" "$iters" |
        awk -v r="$1" -v l="$l" '!/^#/ && NF == 3 { printf "ours,%s,%s,%s,%s,%s\n", r, $1, $2, $3, l }' \
            >>"$out/rounds.csv"
}

run_torch() {
    local l port pid
    l=$(load1)
    port=$(free_port)
    RANK=1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
        "$tpy" "$here/rpc_torch.py" "$iters" >/dev/null 2>"$out/torch1.err" &
    pid=$!
    RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
        "$tpy" "$here/rpc_torch.py" "$iters" 2>"$out/torch0.err" |
        awk -v r="$1" -v l="$l" '!/^#/ && NF == 3 { printf "torch,%s,%s,%s,%s,%s\n", r, $1, $2, $3, l }' \
            >>"$out/rounds.csv"
    wait $pid || echo "# round $1: torch worker1 failed: $(tail -1 "$out/torch1.err")"
}

echo "who,round,size,median_us,mean_us,load1" >"$out/rounds.csv"
{
    echo "# $(date -u '+%F %H:%M UTC') $(uname -n), $(nproc) CPUs; $rounds rounds of $iters iterations"
    echo "# (1 MiB: $((iters / 10 > 10 ? iters / 10 : 10))); torch: ${tpy:+$("$tpy" -c 'import torch; print(torch.__version__)')}"
    echo "# command: (cd $(basename "$top_builddir") && $0 $*)"
    echo "# uptime at the start: $(uptime)"
} >"$out/header.txt"
for r in $(seq 1 "$rounds"); do
    if [ $((r % 2)) = 1 ] || [ -z "$tpy" ]; then
        run_ours "$r"
        [ -n "$tpy" ] && run_torch "$r"
    else
        run_torch "$r"
        run_ours "$r"
    fi
    echo "# round $r of $rounds done, load $(load1)"
done
echo "# uptime at the end: $(uptime)" >>"$out/header.txt"

"${tpy:-python3}" - "$out" <<'PY'
import csv, os, statistics, sys

out = sys.argv[1]
rows = list(csv.DictReader(open(os.path.join(out, "rounds.csv"))))
targets = {8: 20.0, 1 << 20: 2.0}
sizes = sorted({int(r["size"]) for r in rows})
med = {}
for who in ("ours", "torch"):
    for s in sizes:
        v = [float(r["median_us"]) for r in rows if r["who"] == who and int(r["size"]) == s]
        med[who, s] = (statistics.median(v), min(v), max(v), len(v)) if v else None
loads = [float(r["load1"]) for r in rows]
lines = open(os.path.join(out, "header.txt")).read().splitlines()
lines.append("# load average (1 min) before the runs: median %.1f, min %.1f, max %.1f"
             % (statistics.median(loads), min(loads), max(loads)))
lines.append("# median over rounds of each round's median round trip, us (min-max over rounds)")
lines.append("%8s %22s %22s %10s %s" % ("size", "pgc_rpc_sync", "torch rpc_sync", "torch/ours",
                                         "target"))
for s in sizes:
    o, t = med["ours", s], med["torch", s]
    cell = lambda m: "%.1f (%.0f-%.0f)" % m[:3] if m else "-"
    ratio = t[0] / o[0] if o and t else None
    tgt = targets.get(s)
    verdict = ("" if tgt is None else ">= %g: %s" % (tgt, "-" if ratio is None else
                                                     ("met" if ratio >= tgt else "MISSED")))
    lines.append("%8d %22s %22s %10s %s" % (s, cell(o), cell(t),
                                            "%.1f" % ratio if ratio else "-", verdict))
text = "\n".join(lines) + "\n"
open(os.path.join(out, "table.txt"), "w").write(text)
sys.stdout.write(text)

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    print("matplotlib not found: no plot (python3-matplotlib)")
    sys.exit(0)
labels = {8: "8 B", 1024: "1 KiB", 1 << 20: "1 MiB"}
fig, ax = plt.subplots(figsize=(5.2, 3.4))
w = 0.38
for k, (who, color) in enumerate((("ours", "tab:blue"), ("torch", "tab:orange"))):
    xs = [i + (k - 0.5) * w for i, s in enumerate(sizes) if med[who, s]]
    ys = [med[who, s][0] for s in sizes if med[who, s]]
    err = [[med[who, s][0] - med[who, s][1] for s in sizes if med[who, s]],
           [med[who, s][2] - med[who, s][0] for s in sizes if med[who, s]]]
    ax.bar(xs, ys, w, yerr=err, color=color, capsize=3,
           label="pgc_rpc_sync" if who == "ours" else "torch rpc_sync (TensorPipe)")
ax.set_xticks(range(len(sizes)))
ax.set_xticklabels([labels.get(s, str(s)) for s in sizes])
ax.set_yscale("log")
ax.set_ylabel("echo round trip, us (median)")
ax.set_title("RPC echo, 2 processes, 1 node (bars: min-max over rounds)", fontsize=9)
ax.legend(fontsize=8)
fig.tight_layout()
fig.savefig(os.path.join(out, "plot.png"), dpi=80)
print("wrote %s/{rounds.csv,table.txt,plot.png}" % out)
PY
