#!/bin/bash
# test_compare_stats.sh - bench/compare's statistics on made-up rounds (--reanalyse runs no
# benchmark): the paired ratio to the better peer, its confidence interval (the 2nd and 9th
# of 10 per-round ratios), the REGRESSED / unsure rule against the previous build, and bw's
# share of memcpy. The expected figures are worked out by hand in the comments.
set -uo pipefail

srcdir=${srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=tests/scripts/expect.sh
. "$(dirname "$0")/expect.sh"

if ! command -v python3 >/dev/null; then
    echo "SKIP: python3 is not installed (bench/compare needs it)"
    exit 77
fi

# rounds.csv: bench,key_nranks,library,size,round,value. Sizes: 8 (clear regression),
# 16 (5 % worse only by the median), 32 (no change), all allreduce on 2 ranks; bw at 4 MiB
# with its memcpy reference.
{
    echo "bench,key_nranks,library,size,round,value"
    for r in 0 1 2 3 4 5 6 7 8 9; do
        # Open MPI 2.0 and MPICH 4.0 every round: the better peer is Open MPI.
        for s in 8 16 32; do
            echo "allreduce,2,openmpi,$s,$r,2.0"
            echo "allreduce,2,mpich,$s,$r,4.0"
            echo "allreduce,2,prev,$s,$r,1.0"
        done
        echo "bw,2,openmpi,4194304,$r,10000"
        echo "bw,2,mpich,4194304,$r,8000"
        echo "bw,2,prev,4194304,$r,15000"
        echo "bw,2,ours,4194304,$r,15000"
        echo "memcpy,2,ours,4194304,$r,$((20000 + 2000 * r))"
    done
    # size 8: ours / prev = 1.10 1.12 1.15 1.20 1.20 1.20 1.25 1.30 1.30 1.40 (every round
    # slower): median 1.20, interval 1.12-1.30, REGRESSED.
    i=0
    for v in 1.20 1.10 1.30 1.15 1.20 1.40 1.12 1.25 1.20 1.30; do
        echo "allreduce,2,ours,8,$i,$v"
        i=$((i + 1))
    done
    # size 16: 0.90 0.95 1.10 1.10 1.10 1.10 1.10 1.20 1.20 1.30: median 1.10, interval
    # 0.95-1.20, which reaches 1: unsure.
    i=0
    for v in 1.10 0.90 1.20 1.10 0.95 1.10 1.30 1.10 1.20 1.10; do
        echo "allreduce,2,ours,16,$i,$v"
        i=$((i + 1))
    done
    # size 32: ours equal to prev in every round: no flag.
    for r in 0 1 2 3 4 5 6 7 8 9; do
        echo "allreduce,2,ours,32,$r,1.0"
    done
} >"$tmp/rounds.csv"

if ! python3 "$srcdir/bench/compare" --reanalyse "$tmp/rounds.csv" --out "$tmp/out" \
        >"$tmp/log" 2>&1; then
    echo "FAIL - bench/compare --reanalyse exited with an error:"
    cat "$tmp/log"
    exit 1
fi

# One CSV field of ours at (bench, size), by column name, from the run in $out.
out=$tmp/out
field() {
    python3 - "$out/results.csv" "$1" "$2" "$3" <<'PY'
import csv, sys
path, bench, size, col = sys.argv[1:]
for row in csv.DictReader(open(path)):
    if row["library"] == "ours" and row["bench"] == bench and row["size"] == size:
        print(row[col])
PY
}

# The table line of a size in a benchmark's table, and its flag (last word if a flag).
flag() {
    awk -v b="== $1, 2 ranks" -v s="$2" '
        index($0, b) == 1 { on = 1; next }
        /^==/ { on = 0 }
        on && $1 == s { w = $NF; print (w == "REGRESSED" || w == "unsure") ? w : "none" }
    ' "$out/table.txt"
}

# ours / Open MPI (2.0) per round; size 8's median 1.20 / 2 = 0.60, interval 0.56-0.65.
expect "paired ratio = median of ours / the better peer per round" "0.600" \
    "$(field allreduce 8 paired_ratio)"
expect "its interval: the 2nd and 9th of the 10 ratios (low)" "0.560" \
    "$(field allreduce 8 paired_ci_low)"
expect "its interval: the 2nd and 9th of the 10 ratios (high)" "0.650" \
    "$(field allreduce 8 paired_ci_high)"
expect "vs prev is the paired median against the previous build" "1.200" \
    "$(field allreduce 8 vs_prev)"
expect "slower in every round and by 20 %: REGRESSED" "REGRESSED" "$(flag allreduce 8)"
expect "median 10 % worse, interval reaching 1: unsure" "unsure" "$(flag allreduce 16)"
expect "no change: no flag" "none" "$(flag allreduce 32)"
# memcpy 20000..38000 MB/s by round: 15000 / those are 0.750 .. 0.395, whose median is
# (15000 / 28000 + 15000 / 30000) / 2 = (0.536 + 0.500) / 2.
expect "of memcpy: bw over memcpy in the same round, median" "0.518" \
    "$(field bw 4194304 of_memcpy)"
expect "bw's paired ratio to the better peer (Open MPI, 10000)" "1.500" \
    "$(field bw 4194304 paired_ratio)"

# Four rounds are too few for a 90 % interval: none is printed, and no REGRESSED either.
head -1 "$tmp/rounds.csv" >"$tmp/few.csv"
for r in 0 1 2 3; do
    printf 'allreduce,2,openmpi,8,%d,2.0\nallreduce,2,mpich,8,%d,4.0\n' "$r" "$r"
    printf 'allreduce,2,prev,8,%d,1.0\nallreduce,2,ours,8,%d,1.5\n' "$r" "$r"
done >>"$tmp/few.csv"
python3 "$srcdir/bench/compare" --reanalyse "$tmp/few.csv" --out "$tmp/few" >/dev/null 2>&1
out=$tmp/few
expect "4 rounds: the paired median is still there" "0.750" "$(field allreduce 8 paired_ratio)"
expect "4 rounds: no interval" "" "$(field allreduce 8 paired_ci_low)"
expect "4 rounds 50 % slower every time: unsure, not REGRESSED" "unsure" "$(flag allreduce 8)"

# The run order: over 2k rounds of k = 5 libraries (10 for an odd k), each runs first twice
# and follows each other library twice; over k rounds of an even k, once each.
balance() {
    python3 - "$srcdir/bench/compare" "$1" <<'PY'
import collections, importlib.machinery, importlib.util, sys
loader = importlib.machinery.SourceFileLoader("compare", sys.argv[1])
spec = importlib.util.spec_from_loader("compare", loader)
compare = importlib.util.module_from_spec(spec)
loader.exec_module(compare)
k = int(sys.argv[2])
items = ["lib%d" % i for i in range(k)]
first, follows = collections.Counter(), collections.Counter()
for rnd in range(k if k % 2 == 0 else 2 * k):
    order = compare.balanced_order(items, rnd, "allreduce-4")
    assert sorted(order) == items, order
    first[order[0]] += 1
    follows.update(zip(order, order[1:]))
print(sorted(set(first.values())), sorted(set(follows.values())), len(follows))
PY
}
expect "5 libraries, 10 rounds: first twice each, every pair twice, all 20 pairs" \
    "[2] [2] 20" "$(balance 5)"
expect "4 libraries, 4 rounds: first once each, every pair once, all 12 pairs" \
    "[1] [1] 12" "$(balance 4)"

expect_done
