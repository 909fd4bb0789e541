#!/bin/bash
# run_mr.sh [LIST] - runs the multi-rank tests of LIST (default: tests/mr.list) with one
# launcher, chosen by LAUNCHER:
#   mpiexec  the build tree's tools/mpiexec (the default)
#   srun     srun --mpi=pmix -n N (needs a running Slurm: tests/scripts/slurm_cluster.sh up;
#            with MR_SLURM_AUTOSTART=1 this script starts it, and leaves it up)
#   openmpi  mpirun.openmpi --allow-run-as-root --oversubscribe -n N
# Each line of LIST is `name nprocs [args...]`; the program is $top_builddir/tests/mr/name.
# Prints "PASS name nprocs" or "FAIL name nprocs (exit C)" per case, then the last 40 lines
# of each failed case's output, then "N passed, N failed[, N skipped]". Exits 0 if none
# failed, 1 if any did, 77 (skip) when the launcher is missing or the list is empty.
# MR_TIMEOUT: seconds per case (120).
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top_srcdir=${top_srcdir:-$(cd "$here/../.." && pwd)}
top_builddir=${top_builddir:-$PWD}
list=${1:-$top_srcdir/tests/mr.list}
launcher=${LAUNCHER:-mpiexec}
per_case=${MR_TIMEOUT:-120}

skip() {
    echo "SKIP: $*"
    exit 77
}

[ -r "$list" ] || { echo "run_mr.sh: cannot read $list" >&2; exit 2; }
cases=$(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$list")
[ -n "$cases" ] || skip "$list lists no multi-rank tests yet"

case "$launcher" in
    mpiexec)
        launch=("$top_builddir/tools/mpiexec" -n)
        [ -x "${launch[0]}" ] || { echo "run_mr.sh: ${launch[0]} is not built" >&2; exit 2; }
        ;;
    srun)
        command -v srun >/dev/null || skip "needs a running Slurm (tests/scripts/slurm_cluster.sh up)"
        ours=${MPISHIM_SLURM_DIR:-/tmp/mpishim-slurm}/slurm.conf
        if [ -z "${SLURM_CONF:-}" ] && [ -f "$ours" ]; then
            export SLURM_CONF=$ours
        fi
        if [ "${MR_SLURM_AUTOSTART:-0}" = 1 ] && ! "$here/slurm_cluster.sh" status >/dev/null; then
            conf=$("$here/slurm_cluster.sh" up | tail -n 1) ||
                skip "needs a running Slurm (tests/scripts/slurm_cluster.sh up failed)"
            export SLURM_CONF=$conf
        fi
        [ -n "${SLURM_CONF:-}" ] && timeout 10 sinfo -h >/dev/null 2>&1 ||
            skip "needs a running Slurm (tests/scripts/slurm_cluster.sh up)"
        launch=(srun --mpi=pmix -n)
        ;;
    openmpi)
        command -v mpirun.openmpi >/dev/null || skip "needs Open MPI's mpirun.openmpi (apt-get install openmpi-bin)"
        launch=(mpirun.openmpi --allow-run-as-root --oversubscribe -n)
        ;;
    *)
        echo "run_mr.sh: unknown LAUNCHER '$launcher' (mpiexec, srun or openmpi)" >&2
        exit 2
        ;;
esac

# skip_marked MARK SANITIZER WHY: whether this case (name, nprocs, args) carries MARK and
# the build uses SANITIZER (a word of MPS_SAN_FLAGS); then it says so. MARK leaves args.
skip_marked() {
    [[ " $args " == *" $1 "* ]] || return 1
    args=${args/$1/}
    [[ "${MPS_SAN_FLAGS:-}" == *$2* ]] || return 1
    echo "SKIP $name $nprocs $args ($1: $3; needs a build without that sanitizer)"
}

pass=0 fail=0 skipped=0 failures=
out=$(mktemp "${TMPDIR:-/tmp}/run_mr.XXXXXX")
trap 'rm -f "$out"' EXIT
while read -r name nprocs args; do
    prog=$top_builddir/tests/mr/$name
    if [ ! -x "$prog" ]; then
        echo "SKIP $name $nprocs (not built: $prog)"
        skipped=$((skipped + 1))
        continue
    fi
    # A case marked no-lsan (a library beneath us leaks) is skipped where LeakSanitizer
    # checks every process, one marked no-tsan in the ThreadSanitizer build (see the list).
    if skip_marked no-lsan address "a library beneath leaks here" ||
        skip_marked no-tsan thread "see tests/mr.list"; then
        skipped=$((skipped + 1))
        continue
    fi
    # shellcheck disable=SC2086 # args are split on purpose, as written in the list
    timeout -k 5 "$per_case" "${launch[@]}" "$nprocs" "$prog" $args </dev/null 2>&1 | tee "$out"
    rc=${PIPESTATUS[0]}
    if [ "$rc" = 0 ]; then
        echo "PASS $name $nprocs"
        pass=$((pass + 1))
    else
        [ "$rc" = 124 ] && echo "run_mr.sh: $name timed out after $per_case s" >&2
        echo "FAIL $name $nprocs (exit $rc)"
        fail=$((fail + 1))
        failures+="--- FAIL $name $nprocs $args (exit $rc); the last lines it printed:"$'\n'
        failures+=$(tail -n 40 "$out")$'\n'
    fi
done <<<"$cases"

# The failures again, at the end: a CI log shows its head and tail, and a long list's
# middle, where a failing case printed, may be cut.
[ -n "$failures" ] && printf '%s' "$failures"
summary="$pass passed, $fail failed"
[ $skipped -gt 0 ] && summary="$summary, $skipped skipped"
echo "$summary"
[ $fail = 0 ] || exit 1
[ $pass -gt 0 ] || exit 77
exit 0
