#!/bin/sh
# Fuzzes one parser with libFuzzer for a fixed time (FUZZ_SECONDS, 20 by default), with
# AddressSanitizer and UndefinedBehaviorSanitizer, from the seeds in tests/fuzz/corpus/.
# FUZZ_TARGET (or $1) chooses which:
#   store  the TCP store server's frame parser (tests/fuzz/fuzz_store.c; the default)
#   wire   the headers of the shared-memory rings' records and of pg's message envelope
#          (tests/fuzz/fuzz_wire.c, seeds in tests/fuzz/corpus/wire/; run by run_fuzz_wire.sh)
# Any crash, leak or sanitizer report fails the test (the input that caused it is kept and
# printed). Skips when clang or libFuzzer is absent (Debian: apt-get install clang).
set -u
S=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
B=${top_builddir:-$(pwd)}
CC_FUZZ=${CC_FUZZ:-clang}
command -v "$CC_FUZZ" >/dev/null 2>&1 || { echo "SKIP: $CC_FUZZ not found (libFuzzer needs clang)"; exit 77; }
tmp=$(mktemp -d /tmp/run_fuzz.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { return 0; }\n' >"$tmp/probe.c"
if ! "$CC_FUZZ" -fsanitize=fuzzer,address "$tmp/probe.c" -o "$tmp/probe" >"$tmp/probe.log" 2>&1; then
    echo "SKIP: $CC_FUZZ -fsanitize=fuzzer does not link here (libFuzzer missing):"
    tail -3 "$tmp/probe.log"
    exit 77
fi
[ -f "$B/config.h" ] || { echo "SKIP: no config.h in $B (run from the build tree)"; exit 77; }

target=${1:-${FUZZ_TARGET:-store}}
# The sanitizer build's own options would not fit a fuzzer built apart from it.
unset ASAN_OPTIONS LSAN_OPTIONS UBSAN_OPTIONS TSAN_OPTIONS
case "$target" in
    store)
        what="the store's frame parser"
        seeds="$S/tests/fuzz/corpus"
        set -- "$S/tests/fuzz/fuzz_store.c" "$S/pmix_boot/boot_store_server.c" \
            "$S/pmix_boot/boot_store_map.c" "$S/pmix_boot/boot_store.c" "$S/common/mps_log.c" \
            "$S/common/mps_config.c" "$S/common/mps_status.c" "$S/common/mps_proc.c" -lpthread
        ;;
    wire)
        what="the ring records' and message envelopes' checks"
        seeds="$S/tests/fuzz/corpus/wire"
        set -- -I"$S/fabric" -I"$S/pg_core" "$S/tests/fuzz/fuzz_wire.c"
        ;;
    *)
        echo "run_fuzz.sh: unknown target '$target' (store or wire)" >&2
        exit 2
        ;;
esac
"$CC_FUZZ" -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    -I"$B" -I"$S/pmix_boot" -I"$S/common" -I"$S/include" "$@" -o "$tmp/fuzz_$target" ||
    { echo "FAIL: the fuzz target $target does not build"; exit 1; }
mkdir "$tmp/corpus" "$tmp/crash"
"$tmp/fuzz_$target" -max_total_time="${FUZZ_SECONDS:-20}" -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$tmp/crash/" -print_final_stats=1 "$tmp/corpus" "$seeds" \
    >"$tmp/fuzz.log" 2>&1
rc=$?
grep -E "^#[0-9]+.*DONE|stat::number_of_executed_units|Done [0-9]+ runs" "$tmp/fuzz.log"
if [ $rc -ne 0 ] || [ -n "$(ls "$tmp/crash")" ]; then
    tail -40 "$tmp/fuzz.log"
    for f in "$tmp"/crash/*; do
        [ -f "$f" ] && { echo "input $f:"; od -An -tx1 "$f" | head -20; }
    done
    echo "FAIL: $what crashed or leaked (exit $rc)"
    exit 1
fi
echo "PASS: no crash in ${FUZZ_SECONDS:-20} s"
